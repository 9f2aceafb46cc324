"""Write docs/policy.md, the policy-language reference, from schema/policy.schema.json.

The schema is the one definition of the policy language (the loader validates against it), so the
reference is generated from it: every key with its type, whether it is required, its ``description``
and an example built from the schema itself. tests/policy/test_policy_doc.py fails when the committed file
differs from what this script writes, so the reference cannot drift from the schema.

    python docs/make_policy_doc.py          # rewrite docs/policy.md
    python docs/make_policy_doc.py --check  # exit 1 if docs/policy.md is stale
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "schema" / "policy.schema.json"
OUTPUT = ROOT / "docs" / "policy.md"

#: Examples for values whose meaning the schema cannot spell out by itself, by where they sit
#: (``section.key``), then by key, then by the definition they refer to.
STRING_EXAMPLES = {
    "trust.rootMaxAge": "30d",
    "digest": "sha256:" + "0" * 64,
    "keyDigest": "sha256:" + "0" * 64,
    "identity": "https://github.com/acme/tool/.github/workflows/release.yml@refs/tags/v1.0.0",
    "identityRegexp": r"https://github\.com/acme/.+/\.github/workflows/release\.yml@refs/tags/v.+",
    "issuer": "https://token.actions.githubusercontent.com",
    "issuerRegexp": r"https://token\.actions\.githubusercontent\.com",
    "signerIssuer": "https://token.actions.githubusercontent.com",
    "id": "https://github.com/slsa-framework/slsa-github-generator/.github/workflows/"
          "generator_generic_slsa3.yml@refs/tags/v*",
    "signerWorkflow": "https://github.com/slsa-framework/slsa-github-generator/.github/workflows/"
                      "generator_generic_slsa3.yml@refs/tags/v*",
    "runnerEnvironment": "github-hosted",
    "repository": "https://github.com/acme/tool",
    "refs": "refs/tags/v*",
    "url": "https://shims.example.org",
    "path": "keys/release.pub",
    "publicKey.path": "keys/release.pub",
    "trustedRoot.path": "roots/trusted_root.json",
    "audit.log": "/var/log/atip-trust/audit.jsonl",
    "registry.tokenEnv": "SHIMS_TOKEN",
    "predicateType": "https://slsa.dev/provenance/v1",
    "rule": "Bash(gh pr view *)",
    "exec.env.allow": "LC_*",
    "prefix": "gh",
    "deniedCommands": "gh repo delete *",
    "allowedTools": "gh",
    "name": "ci-release",
    "toolRule.name": "gh",
    "builder.name": "SLSA GitHub generator",
    "registry.name": "org shims",
    "publicKey.name": "release key",
    "$schema": "https://atip-trust.dev/schema/policy.schema.json",
    "description": "Release gate for CI",
    "comment": "why this entry exists",
    "$comment": "why this policy exists",
    "note": "level from the builder's own documentation",
    "source": "https://slsa.dev/spec/v1.0/levels",
    "deny": "gh repo delete *",
    "ask": "gh pr merge *",
    "allow": "Bash(gh pr view *)",
    "tool": "gh",
    "reason": "vendor fix pending, tracked in TICKET-42",
    "expires": "2030-01-31",
    "only": "https://github.com/slsa-framework/slsa-github-generator/.github/workflows/"
            "generator_generic_slsa3.yml@refs/tags/v*",
    "trustLevel": "VERIFIED",
    "below": "deny",
    "metadataSources": "org",
    "verifier.id": "https://ci.example.com/atip-trust/verify",
    "verifier.publicKey": "keys/ci-vsa.pub",
    "verifier.keyId": "kms://ci/vsa-key",
    "verifier.resourceUris": "https://github.com/acme/tool/releases/download/v1.2.0/tool",
    "maxAge": "30d",
}


class Doc:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.defs: dict[str, Any] = schema.get("$defs", {})
        #: Sections to write: (title, schema node), in the order they are first referenced.
        self.sections: list[tuple[str, dict[str, Any]]] = []
        self._seen: set[str] = set()

    # -- schema navigation --------------------------------------------------------------------------

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            path = node["$ref"].removeprefix("#/").split("/")
            target: Any = self.schema
            for part in path:
                target = target[part]
            node = target
        return node

    @staticmethod
    def ref_name(node: dict[str, Any]) -> str | None:
        ref = node.get("$ref")
        return ref.rsplit("/", 1)[-1] if isinstance(ref, str) and ref.startswith("#/$defs/") else None

    def is_section(self, node: dict[str, Any]) -> bool:
        node = self.resolve(node)
        return bool(node.get("properties")) or any(
            bool(self.resolve(alt).get("properties")) for alt in node.get("anyOf", []) + node.get("oneOf", [])
        )

    def section_for(self, title: str, node: dict[str, Any]) -> str:
        if title not in self._seen:
            self._seen.add(title)
            self.sections.append((title, node))
        return f"[{title}](#{anchor(title)})"

    # -- type and example ---------------------------------------------------------------------------

    def type_of(self, node: dict[str, Any], where: str) -> str:
        name = self.ref_name(node)
        target = self.resolve(node)
        if name and self.is_section(target):
            link = f"object: {self.section_for(name, target)}"
            plain = [alt for alt in target.get("anyOf", []) + target.get("oneOf", [])
                     if not self.resolve(alt).get("properties")]
            return " or ".join([self.type_of(alt, where) for alt in plain] + [link])
        if "const" in target:
            return f"`{json.dumps(target['const'])}`"
        if "enum" in target:
            return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in target["enum"])
        for key in ("oneOf", "anyOf"):
            if key in target:
                return " or ".join(self.type_of(alt, f"{where}[{i}]") for i, alt in enumerate(target[key]))
        kind = target.get("type")
        if kind == "array":
            return "list of " + self.type_of(target.get("items", {}), where)
        if kind == "object":
            if target.get("properties"):
                return f"object: {self.section_for(where, target)}"
            extra = target.get("additionalProperties")
            if isinstance(extra, dict):
                return "object of " + self.type_of(extra, where)
            return "object"
        if kind == "string" and "pattern" in target:
            return f"string matching `{target['pattern']}`"
        if kind == "integer" and ("minimum" in target or "maximum" in target):
            return f"integer {target.get('minimum', '')}..{target.get('maximum', '')}".replace(" ..", " ≤")
        return str(kind or "any")

    def example(self, node: dict[str, Any], key: str, where: str) -> Any:
        target = self.resolve(node)
        name = self.ref_name(node) or ""
        known = [STRING_EXAMPLES[k] for k in (where, key, name) if k in STRING_EXAMPLES]
        if "const" in target:
            return target["const"]
        if "enum" in target:
            return next((k for k in known if k in target["enum"]), target["enum"][0])
        for alt_key in ("oneOf", "anyOf"):
            if alt_key in target and "type" not in target and "properties" not in target:
                # The first alternative: the plain form (a string before a list or an object).
                return self.example(target[alt_key][0], key, where)
        kind = target.get("type")
        if kind == "array":
            item = self.example(target.get("items", {}), key, where)
            return [item]
        if kind == "object":  # keys inside a definition are looked up as "<definition>.<key>"
            return self.object_example(target, name or where)
        if kind == "string":
            return next((k for k in known if isinstance(k, str)), "text")
        if kind == "integer":
            return max(target.get("minimum", 1), 1) if target.get("maximum", 1) >= 1 else 0
        if kind == "boolean":
            return True
        return None

    def object_example(self, node: dict[str, Any], where: str) -> dict[str, Any]:
        props: dict[str, Any] = node.get("properties", {})
        if not props:
            extra = node.get("additionalProperties")
            return {"source_repository_owner_uri": "https://github.com/acme"} if isinstance(extra, dict) else {}
        keys = list(node.get("required", []))
        for group in node.get("allOf", []) + [node]:  # satisfy every oneOf/anyOf of required keys
            for alt_key in ("oneOf", "anyOf"):
                alts = group.get(alt_key, [])
                if alts and not any(set(a.get("required", [])) <= set(keys) for a in alts):
                    keys.extend(k for k in alts[0].get("required", []) if k not in keys)
        # if/then/else alternatives (verifier: a key, else an identity): the example takes the "if" branch.
        keys.extend(k for k in node.get("if", {}).get("required", []) if k not in keys)
        if not keys:
            keys = [next(iter(props))]
        return {k: self.example(props[k], k, f"{where}.{k}") for k in keys}

    # -- rendering ----------------------------------------------------------------------------------

    def examples(self) -> Iterator[tuple[str, dict[str, Any], Any]]:
        """Every key's (where, schema node, example), after ``render``: what the test validates."""
        for title, node in self.sections:
            body = self.resolve(node)
            if not body.get("properties"):
                body = next(self.resolve(a) for a in body.get("anyOf", []) + body.get("oneOf", [])
                            if self.resolve(a).get("properties"))
            for key, sub in body.get("properties", {}).items():
                where = f"{title}.{key}" if title != "policy" else key
                yield where, sub, self.example(sub, key, where)
            yield title, body, self.object_example(body, title) if title != "policy" else self.policy_example()

    def rows(self, node: dict[str, Any], title: str) -> Iterator[str]:
        required = set(node.get("required", []))
        for key, sub in node.get("properties", {}).items():
            where = f"{title}.{key}" if title != "policy" else key
            description = sub.get("description") or self.resolve(sub).get("description") or ""
            typ = self.type_of(sub, where)
            ex = json.dumps(self.example(sub, key, where), ensure_ascii=False)
            yield (f"| `{key}` | {cell(typ)} | {'yes' if key in required else 'no'} | {cell(description)} "
                   f"| `{cell(ex)}` |")

    def render(self) -> str:
        out = [
            "# Policy language reference",
            "",
            "<!-- Generated from schema/policy.schema.json by docs/make_policy_doc.py: edit the schema's",
            "     descriptions, then run `python docs/make_policy_doc.py`. tests/policy/test_policy_doc.py checks",
            "     that this file is up to date. -->",
            "",
            self.schema.get("description", ""),
            "",
            "A policy is one JSON object. `atip-trust policy check FILE` validates a file against this "
            "schema and explains it; `policy explain FILE` says what it allows in plain words. Every "
            "object refuses keys not listed here.",
            "",
        ]
        self.sections = [("policy", self.schema)]
        self._seen = {"policy"}
        i = 0
        while i < len(self.sections):  # sections found while rendering are appended and rendered too
            title, node = self.sections[i]
            node = self.resolve(node)
            body = node
            if not node.get("properties"):  # an anyOf with one object alternative (trustedRoot)
                body = next(self.resolve(a) for a in node.get("anyOf", []) + node.get("oneOf", [])
                            if self.resolve(a).get("properties"))
            out += [f"## {title}", ""]
            if node.get("description") and title != "policy":
                out += [node["description"], ""]
            out += ["| key | type | required | description | example |",
                    "| --- | --- | --- | --- | --- |"]
            out += list(self.rows(body, title))
            constraints = self.constraints(body)
            if constraints:
                out += ["", constraints]
            example = self.object_example(body, title) if title != "policy" else self.policy_example()
            out += ["", "Example:", "", "```json", json.dumps(example, indent=2, ensure_ascii=False), "```", ""]
            i += 1
        return "\n".join(out).rstrip("\n") + "\n"

    def constraints(self, node: dict[str, Any]) -> str:
        notes = []
        for group in node.get("allOf", []) + [node]:
            for alt_key, word in (("oneOf", "exactly one of"), ("anyOf", "at least one of")):
                alts = group.get(alt_key, [])
                names = [", ".join(f"`{k}`" for k in a.get("required", [])) for a in alts]
                if names and all(names):
                    notes.append(f"Give {word} " + " / ".join(names) + ".")
        cond = node.get("if", {}).get("required", [])
        if cond:
            other = self.constraints(node.get("else", {}))
            notes.append(f"Either {', '.join(f'`{k}`' for k in cond)} or, without it: {other or 'nothing more.'} "
                         "Never keys of both.")
        return " ".join(notes)

    def policy_example(self) -> dict[str, Any]:
        return {
            "version": 1,
            "name": "ci",
            "trust": {"signers": [{"identity": STRING_EXAMPLES["identity"], "issuer": STRING_EXAMPLES["issuer"]}],
                      "trustedBuilders": {"include": "builtin:trusted-builders"}},
            "requirements": {"minTrustLevel": "VERIFIED", "minSlsaLevel": 3},
            "permissions": {"deny": ["gh repo delete *"], "allow": ["Bash(gh pr view *)"]},
            "defaults": {"noMatch": "deny"},
        }


def anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation other than - and _ dropped, spaces to -."""
    return "".join(ch for ch in title.lower().replace(" ", "-") if ch.isalnum() or ch in "-_")


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(schema_path: Path = SCHEMA) -> str:
    return Doc(json.loads(schema_path.read_text(encoding="utf-8"))).render()


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if OUTPUT.read_text(encoding="utf-8") != text:
            sys.stderr.write(f"{OUTPUT} is stale: run python docs/make_policy_doc.py\n")
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
