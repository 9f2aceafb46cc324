// A TypeScript client of `atip-trust serve` (docs/serve.md, docs/serve/openapi.json) for an agent
// runtime that is not written in Python: ask /v1/admit before a tool runs and /v1/check-call before a
// model's call runs, and obey the answer. Node's own http module only; no dependency.
//
//   tsc --target es2022 --module nodenext atip-client.ts && node atip-client.js
//   ATIP_TRUST_SOCKET=/run/user/1000/atip-trust/serve.sock node atip-client.js admit gh "pr view" gh.sigstore.json
//   ATIP_TRUST_URL=http://127.0.0.1:8787 ATIP_TRUST_TOKEN=... node atip-client.js check-call gh pr,view
import * as http from "node:http";

export type Behavior = "allow" | "deny" | "ask" | "error";

export interface AdmitAnswer {
  exitCode: 0 | 1 | 2 | 3;
  behavior: Behavior;
  admission: Record<string, unknown> | null;
  stderr: string;
}

export interface CheckCallAnswer {
  exitCode: 0 | 1 | 2 | 3;
  behavior: Behavior;
  valid?: boolean;
  argv?: string[] | null;
  violations?: unknown[];
  error?: string;
}

export interface Endpoint {
  socketPath?: string; // the Unix socket (peer credentials: only your user)
  url?: string; // loopback HTTP, with the bearer token
  token?: string;
}

// One request; any failure (no service, a bad answer) is a denial: the runtime must not run the tool.
function post<T>(endpoint: Endpoint, path: string, body: unknown, denial: T): Promise<T> {
  const data = Buffer.from(JSON.stringify(body));
  const headers: Record<string, string | number> = {
    "Content-Type": "application/json",
    "Content-Length": data.length,
  };
  let options: http.RequestOptions;
  if (endpoint.socketPath !== undefined) {
    options = { socketPath: endpoint.socketPath, path, method: "POST", headers: { ...headers, Host: "localhost" } };
  } else {
    const url = new URL(path, endpoint.url ?? "http://127.0.0.1:8787");
    headers["Authorization"] = `Bearer ${endpoint.token ?? ""}`;
    options = { host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers };
  }
  return new Promise<T>((resolve) => {
    const req = http.request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        if (res.statusCode !== 200) {
          resolve(denial);
          return;
        }
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")) as T);
        } catch {
          resolve(denial);
        }
      });
    });
    req.setTimeout(30_000, () => req.destroy());
    req.on("error", () => resolve(denial));
    req.end(data);
  });
}

export function admit(endpoint: Endpoint, tool: string, command: string[] = [],
                      bundles: string[] = []): Promise<AdmitAnswer> {
  const denial: AdmitAnswer = { exitCode: 2, behavior: "error", admission: null, stderr: "no answer from atip-trust serve" };
  return post(endpoint, "/v1/admit", { tool, command, bundles }, denial);
}

export function checkCall(endpoint: Endpoint, tool: string, name: string[], args: Record<string, unknown> = {},
                          bundles: string[] = [], metadata?: string): Promise<CheckCallAnswer> {
  const denial: CheckCallAnswer = { exitCode: 2, behavior: "deny", error: "no answer from atip-trust serve" };
  const body: Record<string, unknown> = { tool, name, arguments: args, bundles };
  if (metadata !== undefined) body["metadata"] = metadata;
  return post(endpoint, "/v1/check-call", body, denial);
}

async function main(argv: string[]): Promise<number> {
  const endpoint: Endpoint = process.env["ATIP_TRUST_SOCKET"]
    ? { socketPath: process.env["ATIP_TRUST_SOCKET"] }
    : { url: process.env["ATIP_TRUST_URL"], token: process.env["ATIP_TRUST_TOKEN"] };
  const [what, tool, words, bundleList] = argv;
  if ((what !== "admit" && what !== "check-call") || tool === undefined) {
    process.stderr.write("usage: atip-client (admit TOOL ['WORDS'] | check-call TOOL a,b) [BUNDLE,...]\n");
    return 2;
  }
  const bundles = (bundleList ?? "").split(",").filter((b) => b !== "");
  const answer = what === "admit"
    ? await admit(endpoint, tool, (words ?? "").split(" ").filter((w) => w !== ""), bundles)
    : await checkCall(endpoint, tool, (words ?? "").split(",").filter((w) => w !== ""), {}, bundles);
  process.stdout.write(JSON.stringify({ behavior: answer.behavior, exitCode: answer.exitCode }) + "\n");
  return answer.exitCode;
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; });
