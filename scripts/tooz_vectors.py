#!/usr/bin/env python3
"""Writes tests/data/tooz_ring_vectors.json: which host tooz's HashRing picks for each node.

ringmaster's `--ring tooz` mode must reproduce tooz.hashring.HashRing(hosts, partitions=32)
bit for bit, as Nova's ironic driver uses it: over the host names lowercased (bug 1866380),
looked up with get_nodes(node_uuid.encode('utf-8')), the owner being the configured host whose
lowercased name won. So a deployment coming from Nova keeps its node assignment, capitalised
host names included. Run: pip install tooz; then
python3 scripts/tooz_vectors.py > tests/data/tooz_ring_vectors.json
"""

import json
import uuid
from importlib.metadata import version

from tooz import hashring

TOOZ_VERSION = version("tooz")

CASES = [
    ["compute-1"],
    ["compute-1", "compute-2", "compute-3"],
    ["cmp-%d" % i for i in range(1, 11)],
    ["ironic-compute-a.example.org", "ironic-compute-b.example.org", "nova-ñ-unicode"],
    # Mixed case, as operators name hosts: Nova hashes the lowercased names.
    ["Compute-A", "compute-b", "CMP-3", "Ironic-Compute-04.Example.ORG"],
    ["NOVA-1", "Nova-2", "nova-3"],
]


def node_uuid(case_index, node_index):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "ringmaster/tooz/%d/%d" % (case_index, node_index)))


def main():
    cases = []
    for index, hosts in enumerate(CASES):
        # As Nova's ironic driver: the ring over lowercased names.
        ring = hashring.HashRing({host.lower() for host in hosts}, partitions=32)
        configured = {}
        for host in sorted(hosts):
            configured.setdefault(host.lower(), host)
        lookups = []
        for node_index in range(250):
            node = node_uuid(index, node_index)
            (owner,) = ring.get_nodes(node.encode("utf-8"))
            lookups.append([node, configured[owner]])
        cases.append({"hosts": hosts, "partitions": 32, "lookups": lookups})
    # One lookup per line keeps diffs of the data file readable.
    out = ['{"generator": "scripts/tooz_vectors.py (tooz %s)", "cases": [' % TOOZ_VERSION]
    for case_number, case in enumerate(cases):
        out.append('{"hosts": %s, "partitions": 32, "lookups": [' % json.dumps(case["hosts"], ensure_ascii=False))
        rows = [json.dumps(lookup, ensure_ascii=False) for lookup in case["lookups"]]
        out.append(",\n".join(rows))
        out.append("]}" + ("," if case_number + 1 < len(cases) else ""))
    out.append("]}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
