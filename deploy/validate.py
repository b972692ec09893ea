#!/usr/bin/env python3
"""Offline validation of deploy/: no cluster, nothing fetched.

- The Helm chart (deploy/helm/prism) is linted and rendered with Helm's own Go library (the
  helm-python-sdk package binds it), with its default values and with each file in
  deploy/helm/test-values/; values of the wrong shape must be refused by its
  values.schema.json.
- Every rendered object and every manifest in deploy/kserve/ is validated: built-in kinds
  against the Kubernetes OpenAPI schemas that kubernetes-validate ships, in strict mode
  (unknown fields are errors), custom resources against the openAPIV3Schema of their CRD
  (deploy/schemas/, see PROVENANCE.md), with unknown fields rejected wherever the CRD does not
  preserve them, as the API server's strict field validation does.

Prints one JSON document on stdout: the rendered objects per values file and the KServe
manifests (test/deploy-manifests.test.ts checks Prism's side of them: config.json, probes,
arguments). Exits 1 naming every object that failed.

usage: validate.py [--check FILE ...]   (--check: validate just these manifest files)
"""
import json
import pathlib
import sys

import helm_python as helm
import jsonschema
import kubernetes_validate
import yaml

KUBERNETES_VERSION = "1.33.0"
DEPLOY = pathlib.Path(__file__).resolve().parent
CHART = DEPLOY / "helm" / "prism"
RELEASE, NAMESPACE = "demo", "llm"


def crd_schemas():
    """(apiVersion, kind) -> JSON Schema, from deploy/schemas/*.json."""
    out = {}
    for path in sorted((DEPLOY / "schemas").glob("*.json")):
        crd = json.loads(path.read_text())
        schema = strict_schema(crd["openAPIV3Schema"])
        # metadata is `type: object` in CRDs: check the parts a manifest writes.
        schema["properties"]["metadata"] = OBJECT_META
        out[(f"{crd['group']}/{crd['version']}", crd["kind"])] = schema
    return out


OBJECT_META = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", "maxLength": 253},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def strict_schema(node):
    """A CRD structural schema as JSON Schema: the x-kubernetes-* rules the API server applies
    to a value's shape, and unknown fields rejected where the CRD does not preserve them."""
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: strict_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = strict_schema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [strict_schema(sub) for sub in value]
        elif key.startswith("x-kubernetes-") or key == "nullable":
            continue
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("x-kubernetes-embedded-resource"):
        out.setdefault("properties", {})
        for name in ("apiVersion", "kind"):
            out["properties"].setdefault(name, {"type": "string"})
        out["properties"].setdefault("metadata", {"type": "object"})
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    preserve = node.get("x-kubernetes-preserve-unknown-fields") or node.get("x-kubernetes-embedded-resource")
    if "properties" in out and "additionalProperties" not in out and not preserve:
        out["additionalProperties"] = False
    return out


def validate(doc, where, crds):
    """The errors of one object (empty: valid)."""
    if not isinstance(doc, dict) or "apiVersion" not in doc or "kind" not in doc:
        return [f"{where}: not a Kubernetes object (apiVersion and kind)"]
    name = f"{where}: {doc['kind']} {doc.get('metadata', {}).get('name', '?')}"
    schema = crds.get((doc["apiVersion"], doc["kind"]))
    if schema is not None:
        validator = jsonschema.Draft7Validator(schema)
        return [
            f"{name}: {'.'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
            for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
        ]
    try:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as e:
        path = ".".join(str(p) for p in e.absolute_path) or "(root)"
        return [f"{name}: {path}: {e.message}"]
    except kubernetes_validate.SchemaNotFoundError:
        return [f"{name}: no schema for {doc['apiVersion']} {doc['kind']} (a CRD missing from deploy/schemas/?)"]
    return []


def load_all(text):
    return [d for d in yaml.safe_load_all(text) if d is not None]


def render(values_file):
    values = yaml.safe_load(values_file.read_text()) if values_file else {}
    with helm.Chart.load(str(CHART)) as chart:
        manifests = chart.render(values or {}, name=RELEASE, namespace=NAMESPACE)
    docs = []
    for template, text in sorted(manifests.items()):
        if template.endswith("NOTES.txt"):
            continue
        docs.extend(load_all(text))
    return docs


def main(argv):
    crds = crd_schemas()
    errors = []
    checked = 0
    if argv[:1] == ["--check"]:
        for f in argv[1:]:
            for doc in load_all(pathlib.Path(f).read_text()):
                errors += validate(doc, f, crds)
                checked += 1
        print(json.dumps({"checked": checked, "errors": errors}))
        return 1 if errors else 0

    lint = helm.lint(str(CHART))
    errors += [f"helm lint: {e}" for e in lint.get("errors") or []]
    errors += [
        f"helm lint: {m['path']}: {m['error']}" for m in lint.get("messages") or [] if m.get("severity", 0) >= 3
    ]
    rendered = {}
    variants = [None] + sorted((DEPLOY / "helm" / "test-values").glob("*.yaml"))
    for values_file in variants:
        label = "default" if values_file is None else values_file.name
        docs = render(values_file)
        rendered[label] = docs
        for doc in docs:
            errors += validate(doc, f"chart ({label})", crds)
            checked += 1
    # values.schema.json: Helm refuses values of the wrong shape before rendering anything.
    refused = []
    for bad in ({"ports": {"http": "8000x"}}, {"kvEvents": {"endpoint": "http://indexer:5557"}}, {"modle": {}}):
        try:
            with helm.Chart.load(str(CHART)) as chart:
                chart.render(bad, name=RELEASE, namespace=NAMESPACE)
            errors.append(f"values.schema.json accepted {json.dumps(bad)}")
        except helm.HelmError as e:
            refused.append(str(e))
    kserve = {}
    for f in sorted((DEPLOY / "kserve").glob("*.yaml")):
        docs = load_all(f.read_text())
        kserve[f.name] = docs
        for doc in docs:
            errors += validate(doc, f"kserve/{f.name}", crds)
            checked += 1
    print(
        json.dumps(
            {
                "kubernetesVersion": KUBERNETES_VERSION,
                "helmSdk": helm.helm_sdk_version(),
                "checked": checked,
                "errors": errors,
                "rendered": rendered,
                "refusedValues": refused,
                "kserve": kserve,
            }
        )
    )
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
