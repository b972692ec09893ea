#!/usr/bin/env python3
"""Writes the openAPIV3Schema of each served version of the given CustomResourceDefinitions
as deploy/schemas/<group>.<plural>.<version>.json, without the `description` fields (they
do not take part in validation). Used once per upgrade of the CRDs the manifests target;
PROVENANCE.md records where each CRD came from.

usage: extract-crd-schemas.py CRD.yaml [CRD.yaml ...]
"""
import json
import pathlib
import sys

import yaml


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip(x) for x in node]
    return node


def main(paths):
    out = pathlib.Path(__file__).resolve().parent
    for path in paths:
        crd = yaml.safe_load(pathlib.Path(path).read_text())
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served", False):
                continue
            name = f"{spec['group']}.{spec['names']['plural']}.{version['name']}.json"
            doc = {
                "group": spec["group"],
                "kind": spec["names"]["kind"],
                "version": version["name"],
                "scope": spec["scope"],
                "openAPIV3Schema": strip(version["schema"]["openAPIV3Schema"]),
            }
            (out / name).write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n")
            print(name)


if __name__ == "__main__":
    main(sys.argv[1:])
