import { FeltsenseClient } from "../src/index.js";

const client = new FeltsenseClient(process.env.FELTSENSE_URL ?? "http://localhost:8000", {
  apiKey: process.env.FELTSENSE_API_KEY,
});
const who = { character_id: "ava", user_id: "tester-5" };

// Nine days ago the user told the character something; the session was closed, so its feelings were written.
await client.ingest([
  { ...who, turn_id: "ts-1", session_id: "ts-s1", role: "user", text: "My dog Luna died last week.",
    timestamp: "2025-03-02T18:00:00Z" },
  { ...who, turn_id: "ts-2", session_id: "ts-s1", role: "user",
    text: "Luna and I walked in the park every single morning.", timestamp: "2025-03-02T18:01:00Z" },
]);
await client.closeSession("ts-s1", { closedAt: "2025-03-02T19:00:00Z", waitS: 10 });

// Today's turn: recall before the character answers, and put context.system in its system message.
const message = "I went for a walk in the park this morning";
const recalled = await client.recall({ ...who, message, session_id: "ts-s2", at: "2025-03-11T09:00:00Z" });
console.log(recalled.context.system);
const reply = "That sounds like a gentle way to start the day. How did it feel to be out there?";

// Then store the exchange, so the next turn remembers it.
await client.ingest([
  { ...who, turn_id: "ts-3", session_id: "ts-s2", role: "user", text: message, timestamp: "2025-03-11T09:00:00Z" },
  { ...who, turn_id: "ts-4", session_id: "ts-s2", role: "character", text: reply,
    timestamp: "2025-03-11T09:00:05Z" },
]);
