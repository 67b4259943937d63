/**
 * The TypeScript client against a live `feltsense serve --dev` this test starts (the repository's Python, from
 * FELTSENSE_PYTHON, which `make test` sets), on a free loopback port over a fresh data directory.
 */

import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import {
  AuthError,
  DEFAULT_RETRY_AFTER_S,
  FeltsenseClient,
  NotFoundError,
  UnavailableError,
  ValidationError,
} from "../src/index.js";

const HERE = dirname(fileURLToPath(import.meta.url)); // dist/test
const PACKAGE = resolve(HERE, "..", "..");
const REPO = resolve(PACKAGE, "..", "..");
const PYTHON = process.env.FELTSENSE_PYTHON ?? join(REPO, ".venv", "bin", "python");

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => done(typeof address === "object" && address ? address.port : 0));
    });
  });
}

let service: ChildProcess;
let url = "";
let dataDir = "";
let key = "";
let log = "";

function createKey(org: string, role: string): string {
  const made = spawnSync(PYTHON, ["-m", "api.cli", "keys", "create", "--org", org, "--role", role,
    "--data-dir", dataDir], { cwd: REPO, encoding: "utf8" });
  assert.equal(made.status, 0, made.stderr);
  return made.stdout.trim();
}

before(async () => {
  const root = mkdtempSync(join(tmpdir(), "feltsense-ts-"));
  dataDir = join(root, "data");
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  service = spawn(PYTHON, ["-m", "api.cli", "serve", "--dev", "--port", String(port), "--data-dir", dataDir],
    { cwd: REPO, env: { ...process.env, FELTSENSE_TRANSCRIPT_DIRS: "" }, stdio: ["ignore", "pipe", "pipe"] });
  service.stdout?.on("data", (chunk: Buffer) => { log += chunk.toString(); });
  service.stderr?.on("data", (chunk: Buffer) => { log += chunk.toString(); });
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (service.exitCode !== null) throw new Error(`feltsense serve exited early:\n${log}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`feltsense serve did not come up in 120 s:\n${log}`);
    await new Promise((wait) => setTimeout(wait, 100));
  }
  key = readFileSync(join(dataDir, "dev-key"), "utf8").trim();
});

after(() => {
  service?.kill("SIGTERM");
  rmSync(dirname(dataDir), { recursive: true, force: true });
});

const who = { character_id: "ava", user_id: "tester-1" };

describe("a character turn", () => {
  it("stores a session, closes it and recalls it with the grief rule", async () => {
    const client = new FeltsenseClient(url, { apiKey: key });
    const stored = await client.ingest([
      { ...who, turn_id: "t1", session_id: "s1", role: "user", text: "My dog Luna died last week.",
        timestamp: "2025-03-02T18:00:00Z" },
      { ...who, turn_id: "t2", session_id: "s1", role: "user",
        text: "Luna and I walked in the park every single morning.", timestamp: "2025-03-02T18:01:00Z" },
    ]);
    assert.equal(stored.stored, 2);
    const closed = await client.closeSession("s1", { closedAt: "2025-03-02T19:00:00Z", waitS: 10 });
    assert.ok("traces_written" in closed && closed.traces_written === 2, JSON.stringify(closed));
    const recalled = await client.recall({ ...who, message: "I went for a walk in the park",
      at: "2025-03-11T09:00:00Z" });
    assert.equal(recalled.trace.mode, "hybrid");
    assert.ok(recalled.memories.some((m) => m.text.includes("Luna")));
    assert.ok(recalled.context.system.includes("grieving"), recalled.context.system);
    const full = await client.recall({ ...who, message: "the park", at: "2025-03-11T09:00:00Z" }, { detail: "full" });
    assert.ok(full.memories.every((m) => "components" in m));

    const page = await client.listMemories("ava", "tester-1", { q: "walk in the park" });
    const top = page.items[0];
    assert.ok(top && top.memory.text.includes("park"));
    assert.deepEqual((await client.standingRules("ava", "tester-1")).map((r) => r.register), ["grief"]);
    const receipt = await client.forgetMemory(top.memory.memory_id, "ava", "tester-1");
    assert.deepEqual(receipt.memories, [top.memory.memory_id]);
    await assert.rejects(client.forgetMemory(top.memory.memory_id, "ava", "tester-1"), NotFoundError);
    const erased = await client.eraseUser("ava", "tester-1");
    assert.ok(erased.turns >= 1);
  });

  it("runs the README example as written", () => {
    const readme = readFileSync(join(REPO, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("\n## TypeScript client\n"));
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    assert.equal(block, readFileSync(join(PACKAGE, "examples", "turn.ts"), "utf8"),
      "the README's TypeScript example must be examples/turn.ts as it stands");
    const ran = spawnSync(process.execPath, [join(PACKAGE, "dist", "examples", "turn.js")],
      { env: { ...process.env, FELTSENSE_URL: url, FELTSENSE_API_KEY: key }, encoding: "utf8" });
    assert.equal(ran.status, 0, ran.stderr);
    assert.ok(ran.stdout.includes("grieving") && ran.stdout.includes("Luna"), ran.stdout);
  });
});

describe("errors are the Python client's", () => {
  it("a bad value is a ValidationError naming its field", async () => {
    const client = new FeltsenseClient(url, { apiKey: key });
    const error = await client.ingest([{ ...who, turn_id: "bad", session_id: "s9", role: "user", text: "hi",
      timestamp: "yesterday" }]).catch((e: unknown) => e);
    assert.ok(error instanceof ValidationError, String(error));
    assert.equal(error.status, 422);
    assert.deepEqual(error.fields, ["turns.0.timestamp"]);
  });

  it("no key, a wrong key and a role without the right are AuthErrors", async () => {
    for (const client of [new FeltsenseClient(url), new FeltsenseClient(url, { apiKey: "fs_0000000000000000_no" })]) {
      const error = await client.recall({ ...who, message: "hello" }).catch((e: unknown) => e);
      assert.ok(error instanceof AuthError && error.status === 401, String(error));
    }
    const evaluator = new FeltsenseClient(url, { apiKey: createKey("dev", "evaluator") });
    const error = await evaluator.eraseUser("ava", "tester-1").catch((e: unknown) => e);
    assert.ok(error instanceof AuthError && error.status === 403, String(error));
  });

  it("another organisation's memory is a NotFoundError", async () => {
    const owner = new FeltsenseClient(url, { apiKey: key });
    await owner.ingest([{ ...who, user_id: "tester-2", turn_id: "o1", session_id: "o1", role: "user",
      text: "Our cat Pixel knocked over the lamp.", timestamp: "2025-03-02T18:00:00Z" }]);
    const [item] = (await owner.listMemories("ava", "tester-2")).items;
    assert.ok(item);
    const stranger = new FeltsenseClient(url, { apiKey: createKey("globex", "runtime") });
    assert.deepEqual((await stranger.listMemories("ava", "tester-2")).items, []);
    await assert.rejects(stranger.forgetMemory(item.memory.memory_id, "ava", "tester-2"), NotFoundError);
  });

  it("a service that does not answer is an UnavailableError with retryAfterS", async () => {
    const client = new FeltsenseClient(`http://127.0.0.1:${await freePort()}`, { apiKey: key, timeoutS: 2 });
    const error = await client.recall({ ...who, message: "hello" }).catch((e: unknown) => e);
    assert.ok(error instanceof UnavailableError, String(error));
    assert.equal(error.status, null);
    assert.equal(error.retryAfterS, DEFAULT_RETRY_AFTER_S);
  });

  it("a 503 with Retry-After is an UnavailableError with that delay", async () => {
    const answer = () => new Response(JSON.stringify({ type: "about:blank", title: "Backend unavailable", status: 503,
      detail: "weaviate is down", retry_after_s: 7 }), { status: 503, headers: { "retry-after": "7" } });
    const client = new FeltsenseClient("http://feltsense.invalid", { fetch: async () => answer() });
    const error = await client.recall({ ...who, message: "hello" }).catch((e: unknown) => e);
    assert.ok(error instanceof UnavailableError && error.retryAfterS === 7, String(error));
    assert.equal(error.detail, "weaviate is down");
  });
});
