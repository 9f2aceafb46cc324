"""The bridge's costs, each against a reference measured in the same run.

1. Compiling a generated 1,000-command tool for OpenAI (strict): ``compile_tools`` in-process, from
   a dict (the JSON Schema check included: most of the time) and from an already parsed
   ``MetadataDocument`` (what ``atip-trust compile`` and ``compile_surface`` hand it), against the reference atip-bridge compiling the same JSON with node
   (in-process time printed by node, so neither side pays interpreter start-up).
2. The result filter on 10 MB of output holding 100,000 near misses of every default secret pattern,
   against one ``str.replace`` pass per pattern over the same text (the floor for 12 patterns), and at
   1, 2.5, 5 and 10 MB to show time grows linearly with size.
3. The call loop end to end: ``run_tool_call`` (an OpenAI response parsed, the call validated, the tool
   admitted again from its file, run as a bounded child, output filtered and wrapped), warm (verdict
   cache filled), for a signed copy of /bin/echo, against running that binary directly with
   ``subprocess.run`` from the same process.

    python bench/bridge.py [PATH-TO-BUILT-reference/atip-bridge]

Without the reference path (or without node), part 1 prints our time only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "fixtures"))

from atip_trust.admission.admit import load_admission_policy
from atip_trust.admission.options import AdmitOptions
from atip_trust.bridge import (
    SurfaceTool,
    build_surface,
    compile_tools,
    create_result_filter,
    run_tool_call,
)
from atip_trust.bridge.safety import DEFAULT_REDACT_PATTERNS
from atip_trust.evaluation.inputs import Evidence
from atip_trust.execution.exec import admit_file
from atip_trust.facts.metadata import parse_metadata

import testsigstore

ISSUER = "https://token.actions.githubusercontent.com"
SIGNER = "https://github.com/example-org/tools/.github/workflows/release.yml@refs/tags/v1.0.0"

NODE_SCRIPT = """
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const bridge = await import(pathToFileURL(process.argv[2] + '/dist/index.js').href);
const tool = JSON.parse(readFileSync(process.argv[3], 'utf8'));
const times = [];
for (let i = 0; i < 7; i++) {
  const t = process.hrtime.bigint();
  bridge.compileTools([tool], 'openai', { strict: true });
  times.push(Number(process.hrtime.bigint() - t) / 1e6);
}
times.sort((a, b) => a - b);
console.log(times[3]);
"""


def tool_with(n: int) -> dict[str, object]:
    """``n`` leaf commands in groups of 10, each with two arguments, three options and effects."""
    groups: dict[str, object] = {}
    for g in range(n // 10):
        leaves = {}
        for c in range(10):
            leaves[f"cmd{c}"] = {
                "description": f"Command {c} of group {g}: does a thing to the named resource",
                "arguments": [{"name": "target", "type": "string", "description": "What to act on"},
                              {"name": "count", "type": "integer", "description": "How many", "required": False}],
                "options": [{"name": "out", "flags": ["-o", "--out"], "type": "file", "description": "Output file"},
                            {"name": "mode", "flags": ["--mode"], "type": "enum", "enum": ["a", "b"], "description": "Mode"},
                            {"name": "force", "flags": ["-f"], "type": "boolean", "description": "Force"}],
                "effects": {"network": c % 2 == 0, "destructive": c == 9, "idempotent": c != 3},
            }
        groups[f"group{g}"] = {"description": f"Group {g}", "commands": leaves}
    return {"atip": {"version": "0.6"}, "name": "big", "version": "1.0", "description": "A generated tool",
            "commands": groups}


def median_ms(fn: object, runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def bench_compile(ref_dir: str | None) -> None:
    tool = tool_with(1000)
    ours = median_ms(lambda: compile_tools([tool], "openai", True))
    doc = parse_metadata(json.dumps(tool).encode())
    parsed = median_ms(lambda: compile_tools([doc], "openai", True))
    print(f"compile 1,000 commands (openai strict)  atip-trust {ours:8.1f} ms with the schema check, "
          f"{parsed:6.1f} ms from a parsed MetadataDocument", end="")
    node = shutil.which("node")
    if ref_dir is None or node is None:
        print("  (reference not measured: give the built reference/atip-bridge path and have node)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        script, data = Path(tmp, "bench.mjs"), Path(tmp, "tool.json")
        script.write_text(NODE_SCRIPT)
        data.write_text(json.dumps(tool))
        p = subprocess.run([node, str(script), ref_dir, str(data)], capture_output=True, text=True, check=True)
    ref = float(p.stdout.strip())
    print(f"\n  reference (node) {ref:8.1f} ms (no schema check)  ratio {ours / ref:.1f}x / "
          f"{parsed / ref:.1f}x")


def hostile(size: int, near_misses: int) -> str:
    near = ["ghp_ ", "AKIA123 ", "Bearer ! ", "Basic ! ", "passwords ", "tokens ", "api_ke= ", "secrets ",
            "gho_- ", "password", "=\n", '"password" ', "aws_secret_access_key ", 'SecretAccessKey" ',
            "export TOKEN ", "'api_key' = {", "ASIA12 "]
    block = "".join(near)
    text = block * (near_misses // len(near))
    return text + "x" * max(0, size - len(text))


def bench_filter() -> None:
    f = create_result_filter(max_length=20_000_000)
    text = hostile(10_000_000, 100_000)
    ours = median_ms(lambda: f.filter(text), runs=3)

    def plain() -> None:
        t = text
        for _ in DEFAULT_REDACT_PATTERNS:
            t = t.replace("ghp_0123456789", "[REDACTED]")

    base = median_ms(plain, runs=3)
    print(f"filter 10 MB, 100,000 near misses      atip-trust {ours:8.1f} ms  12 str.replace passes "
          f"{base:8.1f} ms  ratio {ours / base:.1f}x")
    for mb in (1, 2.5, 5, 10):
        size = int(mb * 1_000_000)
        t = hostile(size, size // 100)
        ms = median_ms(lambda: f.filter(t), runs=3)
        print(f"  {mb:>4} MB ({size // 100:>7,} near misses) {ms:8.1f} ms  {ms / mb:6.1f} ms/MB")


def bench_loop() -> None:
    work = Path(tempfile.mkdtemp(prefix="atip-bench-loop-"))
    try:
        ts = testsigstore.TestSigstore(seed=98)
        root = ts.write_trusted_root(work / "trusted_root.json")
        (work / "bundles" / "sha256").mkdir(parents=True)
        tool = work / "quick"
        shutil.copyfile("/bin/echo", tool)
        tool.chmod(0o755)
        data = tool.read_bytes()
        (work / "bundles" / "sha256" / f"{hashlib.sha256(data).hexdigest()}.sigstore.json").write_text(
            json.dumps(ts.sign_artifact(data, identity=SIGNER, issuer=ISSUER)))
        meta = work / "quick.json"
        meta.write_text(json.dumps({
            "atip": {"version": "0.6"}, "name": "quick", "version": "1.0", "description": "echo",
            "commands": {"say": {"description": "Say it", "arguments": [{"name": "text", "type": "string"}],
                                 "effects": {"network": False, "filesystem": {"write": False},
                                             "destructive": False, "idempotent": True}}}}))
        policy_file = work / "policy.json"
        policy_file.write_text(json.dumps({
            "version": 1, "trust": {"trustedRoots": [{"path": str(root)}],
                                    "signers": [{"identity": SIGNER, "issuer": ISSUER}]},
            "permissions": {"allow": [{"rule": "quick say *", "minTrustLevel": "VERIFIED"}]},
            "defaults": {"noMatch": "deny"}}))
        os.environ["ATIP_CACHE_DIR"] = str(work / "cache")
        policy = load_admission_policy(str(policy_file))
        evidence = Evidence(metadata=str(meta))
        opened = admit_file(tool, policy=policy, command=[], evidence=evidence,
                            options=AdmitOptions(name="quick", audit=False), bundle_dir=work / "bundles")
        opened.art.close()
        assert opened.admission.metadata is not None
        surface = build_surface([SurfaceTool.from_admission(opened.admission, opened.admission.metadata,
                                                            evidence, bundle_dir=str(work / "bundles"))],
                                policy, "openai")
        response = {"choices": [{"message": {"tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "quick_say", "arguments": json.dumps({"text": "hello"})}}]}}]}
        audit_log = str(work / "audit.jsonl")
        [first] = run_tool_call("openai", response, surface, policy, audit_log=audit_log)
        assert first.status == "ok" and first.result["stdout"] == "say hello\n", first.result
        loop = median_ms(lambda: run_tool_call("openai", response, surface, policy, audit_log=audit_log),
                         runs=31)
        quiet = median_ms(lambda: run_tool_call("openai", response, surface, policy, audit=False), runs=31)
        direct = median_ms(lambda: subprocess.run([str(tool), "say", "hello"], capture_output=True,
                                                  stdin=subprocess.DEVNULL, check=True), runs=31)
        print(f"run_tool_call end to end (warm)         atip-trust {loop:8.2f} ms ({quiet:.2f} ms without "
              f"the audit line)  subprocess.run direct {direct:6.2f} ms  ratio {loop / direct:.1f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    bench_compile(sys.argv[1] if len(sys.argv) > 1 else None)
    bench_filter()
    bench_loop()


if __name__ == "__main__":
    main()
