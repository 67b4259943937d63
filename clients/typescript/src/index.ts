/**
 * The feltsense API for a character runtime written in TypeScript: a thin layer over the types generated from
 * the served OpenAPI schema (`src/schema.ts`, by openapi-typescript, pinned in package.json; `npm run generate`).
 *
 * Errors are the Python client's: `ValidationError` (422, with `fields`), `NotFoundError`, `AuthError` (401 and
 * 403), `ConflictError`, `GoneError`, and `UnavailableError` (503 or no answer, with `retryAfterS`), all
 * `FeltsenseApiError`s carrying the problem details the service answered with.
 */

import type { components } from "./schema.js";

export type { components } from "./schema.js";
type Schemas = components["schemas"];
export type Turn = Schemas["ReportedTurn"];
export type WindowTurn = Schemas["WindowTurn"];
export type RecallRequest = Schemas["RecallRequest"];
export type CompactRecall = Schemas["CompactRecall"];
export type RecallResult = Schemas["RecallResult"];
export type IngestReport = Schemas["IngestReport"];
export type CloseReport = Schemas["CloseReport"];
export type CloseQueued = Schemas["CloseQueued"];
export type MemoryPage = Schemas["MemoryPage"];
export type ErasureReceipt = Schemas["ErasureReceipt"];
export type ToneRule = Schemas["CompactToneRule"];
export type FieldError = Schemas["FieldError"];

export const DEFAULT_RETRY_AFTER_S = 5;
const VERSION = "0.1.0";

/** A problem the service reported, or (for `UnavailableError`) the service could not be reached. */
export class FeltsenseApiError extends Error {
  constructor(
    readonly status: number | null,
    readonly title: string,
    readonly detail: string,
    readonly errors: FieldError[] = [],
  ) {
    super(`${status ?? "no answer"} ${title}: ${detail}`);
    this.name = new.target.name;
  }
}

/** 401 or 403: the key is missing, wrong, or lacks the role this call needs. */
export class AuthError extends FeltsenseApiError {}
/** 404: the thing does not exist (or is not the caller's to see). */
export class NotFoundError extends FeltsenseApiError {}
/** 409: a turn id the service already holds, sent with other content or for another user; nothing was stored. */
export class ConflictError extends FeltsenseApiError {}
/** 410: the batch holds a turn id whose turn was erased at the user's request; nothing was stored. */
export class GoneError extends FeltsenseApiError {}

/** 422: a value in the request is wrong; `fields` names each one ("turns.0.timestamp", "limit"). */
export class ValidationError extends FeltsenseApiError {
  get fields(): string[] {
    return this.errors.map((e) => e.field).filter((f) => f);
  }
}

/** 503, or no answer at all (refused, reset, timed out): the call may succeed after `retryAfterS`. */
export class UnavailableError extends FeltsenseApiError {
  constructor(
    status: number | null,
    title: string,
    detail: string,
    errors: FieldError[] = [],
    readonly retryAfterS: number = DEFAULT_RETRY_AFTER_S,
  ) {
    super(status, title, detail, errors);
  }
}

const STATUS_ERRORS: Record<number, typeof FeltsenseApiError> = {
  401: AuthError,
  403: AuthError,
  404: NotFoundError,
  409: ConflictError,
  410: GoneError,
  422: ValidationError,
};

export interface ClientOptions {
  /** The API key (`Authorization: Bearer`); left out, no header is sent. */
  apiKey?: string;
  /** The longest a call may take, in seconds (default 10). */
  timeoutS?: number;
  /** Replaces the global fetch (a test's, a proxy's). */
  fetch?: typeof fetch;
}

/** How a close answered: the pass's report when it ran, or where its queued job is. */
export type CloseResult = CloseReport | CloseQueued;

export class FeltsenseClient {
  readonly #baseUrl: string;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(baseUrl: string, options: ClientOptions = {}) {
    if (!/^https?:\/\//.test(baseUrl)) throw new TypeError(`baseUrl must be an http(s) URL, got ${baseUrl}`);
    const timeoutS = options.timeoutS ?? 10;
    if (!(timeoutS > 0)) throw new TypeError(`timeoutS must be positive, got ${timeoutS}`);
    if (options.apiKey === "") throw new TypeError("apiKey is empty: leave it out to send no Authorization header");
    this.#baseUrl = baseUrl.replace(/\/+$/, "");
    this.#timeoutMs = timeoutS * 1000;
    this.#fetch = options.fetch ?? fetch;
    this.#headers = {
      accept: "application/json, application/problem+json",
      "user-agent": `feltsense-client-ts/${VERSION}`,
      ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
    };
  }

  /** Append turns (at most 500 a call); a turn id seen before is counted as a duplicate, not stored again. */
  ingest(turns: Turn[]): Promise<IngestReport> {
    return this.#call("POST", "/v1/turns", { body: { turns } });
  }

  /**
   * Close a session: the write-time pass runs now (a `CloseReport`) or is queued (a `CloseQueued` with its job).
   * With `waitS` (at most 30), a queued pass is waited for that long.
   */
  async closeSession(sessionId: string, options: { closedAt?: string; waitS?: number } = {}): Promise<CloseResult> {
    const query = options.waitS === undefined ? undefined : { wait: "true", timeout_s: String(options.waitS) };
    const body = options.closedAt === undefined ? {} : { closed_at: options.closedAt };
    const answer = await this.#call<CloseReport | CloseQueued>("POST", `/v1/sessions/${segment(sessionId)}/close`,
      { body, query });
    return "job_id" in answer && answer.report ? answer.report : answer;
  }

  /**
   * Recall for one turn of the character. `context.system` (the stable prefix, then this turn's tone rules) goes
   * in the system message and `context.tail` beside the user's message; `trace.mode` says which mode answered
   * (anything but "hybrid" is degraded). `detail: "full"` answers the whole result, every trace and score.
   */
  recall(query: RecallRequest): Promise<CompactRecall>;
  recall(query: RecallRequest, options: { detail: "full" }): Promise<RecallResult>;
  recall(query: RecallRequest, options: { detail?: "compact" | "full" } = {}): Promise<CompactRecall | RecallResult> {
    return this.#call("POST", "/v1/recall", { body: query, query: { detail: options.detail ?? "compact" } });
  }

  /** One user's memories with one character, or a search of them (`q`: faded and archived ones too, flagged). */
  listMemories(characterId: string, userId: string,
               options: { q?: string; offset?: number; limit?: number } = {}): Promise<MemoryPage> {
    const query: Record<string, string> = { character_id: characterId, user_id: userId };
    if (options.q !== undefined) query.q = options.q;
    if (options.offset !== undefined) query.offset = String(options.offset);
    if (options.limit !== undefined) query.limit = String(options.limit);
    return this.#call("GET", "/v1/memories", { query });
  }

  /** Erase one memory for good (its trace, facts, vector, words); a receipt that counts each. */
  forgetMemory(memoryId: string, characterId: string, userId: string): Promise<ErasureReceipt> {
    return this.#call("DELETE", `/v1/memories/${segment(memoryId)}`,
      { query: { character_id: characterId, user_id: userId } });
  }

  /** A user's erasure request: everything they said to this character, with a receipt. */
  eraseUser(characterId: string, userId: string): Promise<ErasureReceipt> {
    return this.#call("DELETE", `/v1/users/${segment(userId)}`, { query: { character_id: characterId } });
  }

  /** The standing tone rules in force for a user with one character now, whatever a turn recalls. */
  standingRules(characterId: string, userId: string): Promise<ToneRule[]> {
    return this.#call("GET", "/v1/tone-rules", { query: { character_id: characterId, user_id: userId } });
  }

  async #call<T>(method: string, path: string,
                 options: { body?: unknown; query?: Record<string, string> } = {}): Promise<T> {
    const url = new URL(this.#baseUrl + path);
    for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, value);
    const request = `${method} ${path}`;
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method,
        headers: options.body === undefined ? this.#headers : { ...this.#headers, "content-type": "application/json" },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (error) {
      const kind = error instanceof Error && error.name === "TimeoutError" ? "timed out" : "could not be reached";
      throw new UnavailableError(null, "Service unavailable", `${request}: the service ${kind} (${String(error)})`);
    }
    const text = await response.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (response.ok) {
      if (parsed === undefined) {
        throw new FeltsenseApiError(response.status, "Unexpected response", `${request}: not JSON: ${text.slice(0, 200)}`);
      }
      return parsed as T;
    }
    throw problem(response, parsed, text);
  }
}

/** A path segment, quoted whole: an id is one segment whatever slashes or dots it holds. */
function segment(id: string): string {
  return encodeURIComponent(id);
}

function problem(response: Response, parsed: unknown, text: string): FeltsenseApiError {
  const body = (parsed !== null && typeof parsed === "object" ? parsed : {}) as Record<string, unknown>;
  const title = typeof body.title === "string" && body.title ? body.title : response.statusText || "HTTP error";
  const detail = typeof body.detail === "string" && body.detail ? body.detail
    : text.slice(0, 200) || `HTTP ${response.status}`;
  const errors = Array.isArray(body.errors)
    ? body.errors.filter((e): e is FieldError => e !== null && typeof e === "object") : [];
  if (response.status === 503) {
    return new UnavailableError(response.status, title, detail, errors, retryAfter(response, body));
  }
  const ErrorType = STATUS_ERRORS[response.status] ?? FeltsenseApiError;
  return new ErrorType(response.status, title, detail, errors);
}

function retryAfter(response: Response, body: Record<string, unknown>): number {
  // Retry-After may also be an HTTP date; only the delay-seconds form is read, else the service's default.
  for (const value of [response.headers.get("retry-after"), body.retry_after_s]) {
    if (typeof value === "number" && Number.isInteger(value) && value >= 0) return value;
    if (typeof value === "string" && /^\d+$/.test(value.trim())) return Number(value.trim());
  }
  return DEFAULT_RETRY_AFTER_S;
}
