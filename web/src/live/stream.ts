// Reading the API's change events (GET /api/workflows/events/stream,
// server-sent events) with fetch: the browser's EventSource cannot send the
// Authorization header, and the session's bearer token must not travel in a
// URL (logs, history), so the stream is asked for like every other call.
import { getToken } from "../auth/session";

export const STREAM_PATH = "/api/workflows/events/stream";

export type LiveScope = "database" | "process";
export type Hello = { scope: LiveScope; heartbeatSeconds: number };
export type Change = { topic: "jobs" | "instances" | "health"; tenant: string | null; instanceIds: number[] };

export type StreamHandlers = {
  onHello: (hello: Hello) => void;
  onChange: (change: Change) => void;
};

/** Why a stream ended without being aborted: `refused` (401/403: retrying
 * will not help until the session changes) or `broken`. */
export class StreamEnded extends Error {
  constructor(readonly reason: "refused" | "broken") {
    super(`event stream ${reason}`);
  }
}

/** Read the stream until it ends, `signal` aborts it or no byte (event or
 * heartbeat) arrives for three heartbeats; always ends in a rejection. */
export async function readChanges(signal: AbortSignal, handlers: StreamHandlers): Promise<never> {
  const response = await fetch(STREAM_PATH, {
    headers: { Authorization: `Bearer ${getToken() ?? ""}`, Accept: "text/event-stream" },
    cache: "no-store",
    signal,
  });
  if (response.status === 401 || response.status === 403) throw new StreamEnded("refused");
  if (!response.ok || !response.body) throw new StreamEnded("broken");
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let quietMs = 45_000;
  for (;;) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const silence = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StreamEnded("broken")), quietMs);
    });
    let chunk: ReadableStreamReadResult<string>;
    try {
      chunk = await Promise.race([reader.read(), silence]);
    } catch (error) {
      void reader.cancel().catch(() => undefined);
      throw error;
    } finally {
      clearTimeout(timer);
    }
    if (chunk.done) throw new StreamEnded("broken");
    buffer += chunk.value;
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const { name, data } = parseBlock(block);
      if (data === null) continue; // a heartbeat comment
      if (name === "hello") {
        const hello = data as Hello;
        quietMs = Math.max(3 * hello.heartbeatSeconds * 1000, 10_000);
        handlers.onHello(hello);
      } else if (name === "change") {
        handlers.onChange(data as Change);
      }
    }
  }
}

function parseBlock(block: string): { name: string; data: unknown } {
  let name = "message";
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
  }
  return { name, data: data.length ? (JSON.parse(data.join("\n")) as unknown) : null };
}
