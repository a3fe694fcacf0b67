#!/usr/bin/env python3
"""The data of Placement 16.0.0's gabbi fixtures, made over HTTP.

Placement's gabbi files name a fixture (`fixtures: [GranularFixture]`) that upstream runs
in-process: it sets environment variables (`RP_UUID`, `PROJECT_ID`, ...) and writes providers,
inventories, traits, aggregates and allocations straight into the database. Against a live
server the same data has to be made through the API, in the same order, so that every
provider's and consumer's generation ends where the files expect it:

- a provider is created (generation 0); its aggregates are set at microversion 1.18, which does
  not bump the generation, as the in-process fixture does not;
- each inventory is added on its own (+1), each trait set replaces the last (+1), each
  allocation replaces the consumer's (+1 on the provider; the new consumer ends at 1).

Each fixture is a list of steps (below), read by `make`. Usage:

    fixtures.py URL FIXTURE     prints NAME=VALUE lines: the variables the files read
    fixtures.py --fixture-of FILE   prints the fixture a gabbit file names (APIFixture if none)

Standard library only.
"""

import json
import re
import sys
import urllib.error
import urllib.request
import uuid

# The variables every fixture sets (APIFixture), each a fresh uuid unless given.
BASE_VARIABLES = [
    "RP_UUID", "RP_NAME", "RP_UUID1", "RP_NAME1", "RP_UUID2", "RP_NAME2", "PROJECT_ID",
    "ADMIN_PROJECT_ID", "SERVICE_PROJECT_ID", "USER_ID", "PROJECT_ID_ALT", "USER_ID_ALT",
    "INSTANCE_UUID", "MIGRATION_UUID", "CONSUMER_UUID", "PARENT_PROVIDER_UUID",
    "ALT_PARENT_PROVIDER_UUID",
]
FIXED_VARIABLES = {
    "CUSTOM_RES_CLASS": "CUSTOM_IRON_NFV",
    "CUSTOM_RES_CLASS1": "CUSTOM_IRON_NFV1",
    "CUSTOM_RES_CLASS2": "CUSTOM_IRON_NFV2",
}

# Steps, in order:
#   ("var", NAME)                          a fresh uuid in NAME
#   ("rp", KEY, NAME, [AGG VARS], PARENT)  provider NAME (uuid: variable KEY's value, else a new
#                                          one stored in KEY; PARENT a key or None)
#   ("inv", KEY, CLASS, TOTAL, {options})  one inventory record (max_unit defaults to TOTAL)
#   ("traits", KEY, [TRAITS])              the provider's traits (custom ones made first)
#   ("aggs", KEY, [AGG VARS])              the provider's aggregates (no generation bump)
#   ("class", NAME)                        a custom resource class
#   ("alloc", KEY, {CLASS: N}, USER, PROJECT, CONSUMER VAR or None)
#                                          a new consumer's allocation on the provider
#   ("alias", NAME, KEY)                   NAME holds KEY's value too


def compute_host(prefix, bridges, pfs, bridge_kbps, pf_kbps):
    """A host of NeutronQoSMultiSegmentFixture: the compute node, its OVS agent with a bridge per
    (name, physnet) of `bridges`, its SR-IOV agent with a PF per physnet of `pfs`."""
    ovs, sriov = f"{prefix}:Open vSwitch agent", f"{prefix}:NIC Switch agent"
    direct = ["CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL",
              "CUSTOM_VNIC_TYPE_MACVTAP"]
    bandwidth = lambda key, kbps: [("inv", key, "NET_BW_EGR_KILOBIT_PER_SEC", kbps, {}),
                                   ("inv", key, "NET_BW_IGR_KILOBIT_PER_SEC", kbps, {})]
    steps = [
        ("rp", prefix, prefix, [], None),
        ("inv", prefix, "VCPU", 8, {}), ("inv", prefix, "MEMORY_MB", 4096, {}),
        ("inv", prefix, "DISK_GB", 500, {}),
        ("rp", f"{prefix}:ovs_agent", ovs, [], prefix),
        ("inv", f"{prefix}:ovs_agent", "NET_PACKET_RATE_KILOPACKET_PER_SEC", 1000, {}),
        ("traits", f"{prefix}:ovs_agent", ["CUSTOM_VNIC_TYPE_NORMAL"]),
    ]
    for bridge, physnet in bridges:
        key = f"{prefix}:{bridge.replace('-', '_')}"
        steps += ([("rp", key, f"{ovs}:{bridge}", [], f"{prefix}:ovs_agent")]
                  + bandwidth(key, bridge_kbps)
                  + [("traits", key, ["CUSTOM_VNIC_TYPE_NORMAL", physnet])])
    steps += [("rp", f"{prefix}:sriov_agent", sriov, [], prefix),
              ("traits", f"{prefix}:sriov_agent", direct)]
    for index, physnet in enumerate(pfs):
        key = f"{prefix}:pf{index}"
        steps += ([("rp", key, f"{sriov}:enp129s0f{index}", [], f"{prefix}:sriov_agent")]
                  + bandwidth(key, pf_kbps) + [("traits", key, direct + [physnet])])
    return steps


def neutron_qos():
    steps = []
    for host, physnet in (("compute0", "CUSTOM_PHYSNET_OTHER"),
                          ("compute1", "CUSTOM_PHYSNET_MSN_S1"),
                          ("compute2", "CUSTOM_PHYSNET_MSN_S2")):
        steps += compute_host(host, [("br-ex", physnet)], [physnet], 5000, 10000)
    both = ["CUSTOM_PHYSNET_MSN_S1", "CUSTOM_PHYSNET_MSN_S2"]
    steps += compute_host("compute3", list(zip(["br-ex", "br-ex2"], both)), both, 1000, 1000)
    # Upstream sets compute3's SR-IOV agent variable to compute2's agent; the files expect it.
    steps.append(("alias", "compute3:sriov_agent", "compute2:sriov_agent"))
    return steps


def numa_network(deep):
    """NUMANetworkFixture (and DeepNUMANetworkFixture: cn1 and cn2 under parents)."""
    steps = [("var", "AGGA_UUID")]
    pre = []
    if deep:
        pre = [("rp", "GP1", "gp1", [], None), ("rp", "P1", "p1", [], "GP1"),
               ("rp", "P2", "p2", [], "GP1"), ("rp", "CN1_UUID", "cn1", [], "P1"),
               ("rp", "CN2_UUID", "cn2", [], "P2")]
    steps = pre + steps + [
        ("rp", "SS1_UUID", "ss1", ["AGGA_UUID"], None),
        ("traits", "SS1_UUID", ["MISC_SHARES_VIA_AGGREGATE"]),
        ("inv", "SS1_UUID", "DISK_GB", 2000, {}),
    ]
    steps += [] if deep else [("rp", "CN1_UUID", "cn1", ["AGGA_UUID"], None)]
    steps += [("aggs", "CN1_UUID", ["AGGA_UUID"]),
              ("traits", "CN1_UUID", ["COMPUTE_VOLUME_MULTI_ATTACH"])]
    for index in (0, 1):
        key = f"NUMA{index}_UUID"
        traits = ["HW_NUMA_ROOT"] + (["CUSTOM_FOO"] if index else [])
        steps += [("rp", key, f"numa{index}", [], "CN1_UUID"), ("traits", key, traits),
                  ("inv", key, "VCPU", 4, {})]
    steps += [
        ("inv", "NUMA0_UUID", "MEMORY_MB", 2048, {"min_unit": 512, "step_size": 256}),
        ("inv", "NUMA1_UUID", "MEMORY_MB", 2048, {"min_unit": 256, "max_unit": 1024}),
        ("alloc", "NUMA0_UUID", {"VCPU": 2}, "numafx-user", "numafx-project", None),
        ("rp", "FPGA0_UUID", "fpga0", [], "NUMA0_UUID"), ("inv", "FPGA0_UUID", "FPGA", 1, {}),
        ("rp", "PGPU0_UUID", "pgpu0", [], "NUMA0_UUID"), ("inv", "PGPU0_UUID", "VGPU", 8, {}),
    ]
    for index in (0, 1):
        key = f"FPGA1_{index}_UUID"
        steps += [("rp", key, f"fpga1_{index}", [], "NUMA1_UUID"), ("inv", key, "FPGA", 1, {})]
    steps += [("rp", "SRIOV_AGENT_UUID", "sriov_agent", [], "CN1_UUID"),
              ("traits", "SRIOV_AGENT_UUID", ["CUSTOM_VNIC_TYPE_DIRECT"])]
    for index in (1, 2):
        key = f"ESN{index}_UUID"
        steps += [("rp", key, f"esn{index}", [], "SRIOV_AGENT_UUID"),
                  ("traits", key, [f"CUSTOM_PHYSNET{index}"]),
                  ("inv", key, "NET_BW_EGR_KILOBIT_PER_SEC", 10000 * index, {})]
    steps += [
        ("rp", "OVS_AGENT_UUID", "ovs_agent", [], "CN1_UUID"),
        ("traits", "OVS_AGENT_UUID", ["CUSTOM_VNIC_TYPE_NORMAL"]),
        ("rp", "BR_INT_UUID", "br_int", [], "OVS_AGENT_UUID"),
        ("traits", "BR_INT_UUID", ["CUSTOM_PHYSNET0"]),
        ("inv", "BR_INT_UUID", "NET_BW_EGR_KILOBIT_PER_SEC", 1000, {}),
    ]
    steps += [] if deep else [("rp", "CN2_UUID", "cn2", [], None)]
    steps += [
        ("aggs", "CN2_UUID", ["AGGA_UUID"]), ("inv", "CN2_UUID", "VCPU", 8, {}),
        ("alloc", "CN2_UUID", {"VCPU": 3}, "numafx-user", "numafx-project", None),
        ("inv", "CN2_UUID", "MEMORY_MB", 2048, {"min_unit": 1024, "step_size": 128}),
        ("inv", "CN2_UUID", "DISK_GB", 1000, {}), ("traits", "CN2_UUID", ["CUSTOM_FOO"]),
    ]
    for index in (1, 2, 3):
        key = f"NIC{index}_UUID"
        steps += [("rp", key, f"nic{index}", [], "CN2_UUID"),
                  ("traits", key, ["CUSTOM_HW_NIC_ROOT"])]
    pfs = [("1_1", "NIC1_UUID", 1, 4), ("1_2", "NIC1_UUID", 2, 4), ("2_1", "NIC2_UUID", 1, 2),
           ("2_2", "NIC2_UUID", 2, 2), ("2_3", "NIC2_UUID", 1, 2), ("2_4", "NIC2_UUID", 2, 2),
           ("3_1", "NIC3_UUID", 1, 8)]
    for suffix, nic, physnet, vfs in pfs:
        key = f"PF{suffix}_UUID"
        steps += [("rp", key, f"pf{suffix}", [], nic),
                  ("traits", key, [f"CUSTOM_PHYSNET{physnet}"]),
                  ("inv", key, "CUSTOM_VF", vfs, {})]
    return steps


def shared_storage():
    steps = [("var", "AGG_UUID")]
    for key, name in (("CN1_UUID", "cn1"), ("CN2_UUID", "cn2"), ("SS_UUID", "ss"),
                      ("SS2_UUID", "ss2")):
        steps.append(("rp", key, name, ["AGG_UUID"], None))
    for numa, cn in (("1_1", "CN1_UUID"), ("1_2", "CN1_UUID"), ("2_1", "CN2_UUID"),
                     ("2_2", "CN2_UUID")):
        steps.append(("rp", f"NUMA{numa}_UUID", f"numa{numa}", [], cn))
    for pf in ("1_1", "1_2", "2_1", "2_2"):
        steps.append(("rp", f"PF{pf}_UUID", f"pf{pf}", [], f"NUMA{pf}_UUID"))
    for cn in ("CN1_UUID", "CN2_UUID"):
        steps += [("inv", cn, "VCPU", 24, {"allocation_ratio": 16.0}),
                  ("inv", cn, "MEMORY_MB", 128 * 1024, {"allocation_ratio": 1.5})]
    steps += [("traits", "CN1_UUID", ["HW_CPU_X86_SSE", "HW_CPU_X86_SSE2"]),
              ("inv", "CN2_UUID", "DISK_GB", 2000, {"reserved": 100})]
    for shared in ("SS_UUID", "SS2_UUID"):
        steps += [("inv", shared, "DISK_GB", 2000, {"reserved": 100}),
                  ("traits", shared, ["MISC_SHARES_VIA_AGGREGATE"])]
    for pf in ("1_1", "1_2", "2_1", "2_2"):
        steps.append(("inv", f"PF{pf}_UUID", "SRIOV_NET_VF", 8, {}))
    return steps


def numa_aggregate():
    steps = [("var", "AGGA_UUID"), ("var", "AGGB_UUID"), ("var", "AGGC_UUID"),
             ("rp", "CN1_UUID", "cn1", ["AGGA_UUID"], None),
             ("rp", "CN2_UUID", "cn2", ["AGGA_UUID", "AGGB_UUID"], None),
             ("rp", "SS1_UUID", "ss1", ["AGGA_UUID"], None),
             ("rp", "SS2_UUID", "ss2", ["AGGC_UUID"], None),
             ("rp", "NUMA1_1_UUID", "numa1_1", ["AGGC_UUID"], "CN1_UUID"),
             ("rp", "NUMA1_2_UUID", "numa1_2", [], "CN1_UUID"),
             ("rp", "NUMA2_1_UUID", "numa2_1", [], "CN2_UUID"),
             ("rp", "NUMA2_2_UUID", "numa2_2", [], "CN2_UUID")]
    for numa in ("1_1", "1_2", "2_1", "2_2"):
        steps.append(("inv", f"NUMA{numa}_UUID", "VCPU", 24, {"allocation_ratio": 16.0}))
    for shared in ("SS1_UUID", "SS2_UUID"):
        steps += [("inv", shared, "DISK_GB", 2000, {"reserved": 100}),
                  ("traits", shared, ["MISC_SHARES_VIA_AGGREGATE"])]
    return steps


def granular():
    def node(key, name, aggs, inventory, traits):
        return ([("rp", key, name, aggs, None)]
                + [("inv", key, rc, total, options) for rc, total, options in inventory]
                + [("traits", key, traits)])
    plain = lambda *pairs: [(rc, total, {}) for rc, total in pairs]
    return ([("class", "CUSTOM_NET_MBPS"), ("var", "AGGA"), ("var", "AGGB"), ("var", "AGGC")]
            + node("CN_LEFT", "cn_left", ["AGGA"], plain(
                ("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500), ("VGPU", 8),
                ("SRIOV_NET_VF", 8), ("CUSTOM_NET_MBPS", 4000)),
                ["HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_GPU_API_DXVA", "HW_NIC_DCB_PFC",
                 "CUSTOM_FOO"])
            + node("CN_MIDDLE", "cn_middle", ["AGGA", "AGGB"], plain(
                ("VCPU", 8), ("MEMORY_MB", 4096), ("SRIOV_NET_VF", 8), ("CUSTOM_NET_MBPS", 4000)),
                ["HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE", "HW_NIC_ACCEL_TLS"])
            + node("CN_RIGHT", "cn_right", ["AGGB", "AGGC"],
                   plain(("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500))
                   + [("VGPU", 8, {"max_unit": 2})],
                   ["HW_CPU_X86_MMX", "HW_GPU_API_DXVA", "CUSTOM_DISK_SSD"])
            + node("SHR_DISK_1", "shr_disk_1", ["AGGA"], plain(("DISK_GB", 1000)),
                   ["MISC_SHARES_VIA_AGGREGATE", "CUSTOM_DISK_SSD"])
            + node("SHR_DISK_2", "shr_disk_2", ["AGGA", "AGGB"], plain(("DISK_GB", 1000)),
                   ["MISC_SHARES_VIA_AGGREGATE"])
            + node("SHR_NET", "shr_net", ["AGGC"],
                   plain(("SRIOV_NET_VF", 16), ("CUSTOM_NET_MBPS", 40000)),
                   ["MISC_SHARES_VIA_AGGREGATE"]))


def allocation():
    return [
        ("var", "ALT_USER_ID"),
        ("rp", "RP_UUID", "$RP_NAME", [], None),
        ("inv", "RP_UUID", "DISK_GB", 2048, {"step_size": 10, "min_unit": 10, "max_unit": 1000}),
        ("inv", "RP_UUID", "VCPU", 10, {}),
        ("alloc", "RP_UUID", {"DISK_GB": 1000}, "$USER_ID", "$PROJECT_ID", "CONSUMER_0"),
        ("alloc", "RP_UUID", {"VCPU": 6}, "$USER_ID", "$PROJECT_ID", "CONSUMER_ID"),
        ("alloc", "RP_UUID", {"DISK_GB": 20, "VCPU": 1}, "$ALT_USER_ID", "$PROJECT_ID",
         "ALT_CONSUMER_ID"),
        ("var", "ALT_RP_UUID"), ("var", "ALT_RP_NAME"),
    ]


def non_shared_storage():
    steps = [("var", "AGGA_UUID"), ("var", "AGGB_UUID"), ("var", "AGGC_UUID")]
    for index in (1, 2, 3):
        steps.append(("rp", f"CN{index}_UUID", f"cn{index}", [], None))
    for index in (1, 2, 3):
        steps += [("inv", f"CN{index}_UUID", "VCPU", 24, {}),
                  ("inv", f"CN{index}_UUID", "MEMORY_MB", 128 * 1024, {}),
                  ("inv", f"CN{index}_UUID", "DISK_GB", 2000, {})]
    return steps


# Fixtures that only configure the server (policy, CORS) make no data.
FIXTURES = {
    "APIFixture": list, "LegacyRBACPolicyFixture": list, "SecureRBACPolicyFixture": list,
    "OpenPolicyFixture": list, "CORSFixture": list,
    "AllocationFixture": allocation, "SharedStorageFixture": shared_storage,
    "NUMAAggregateFixture": numa_aggregate, "NUMANetworkFixture": lambda: numa_network(False),
    "DeepNUMANetworkFixture": lambda: numa_network(True), "GranularFixture": granular,
    "NonSharedStorageFixture": non_shared_storage,
    "NeutronQoSMultiSegmentFixture": neutron_qos,
}


class Placement:
    """An admin client of the Placement API at `url`."""

    def __init__(self, url):
        self.url = url.rstrip("/")

    def call(self, method, path, body=None, version="1.20"):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "x-auth-token": "admin", "openstack-api-version": f"placement {version}",
            "content-type": "application/json", "accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as error:
            detail = error.read().decode()[:300]
            raise SystemExit(f"fixtures: {method} {path}: {error.code} {detail}") from None
        return json.loads(text) if text else None

    def generation(self, provider):
        return self.call("GET", f"/resource_providers/{provider}")["generation"]


def make(url, fixture):
    """Runs `fixture`'s steps against `url`; returns the variables to set."""
    if fixture not in FIXTURES:
        raise SystemExit(f"fixtures: no fixture {fixture}")
    placement = Placement(url)
    values = {name: str(uuid.uuid4()) for name in BASE_VARIABLES}
    values.update(FIXED_VARIABLES)
    value = lambda text: values[text[1:]] if text.startswith("$") else text
    for step in FIXTURES[fixture]():
        run_step(placement, values, value, step)
    return values


def run_step(placement, values, value, step):
    kind = step[0]
    if kind == "var":
        values[step[1]] = str(uuid.uuid4())
    elif kind == "alias":
        values[step[1]] = values[step[2]]
    elif kind == "class":
        placement.call("PUT", f"/resource_classes/{step[1]}", version="1.7")
    elif kind == "rp":
        _, key, name, aggs, parent = step
        values.setdefault(key, str(uuid.uuid4()))
        body = {"name": value(name), "uuid": values[key]}
        if parent:
            body["parent_provider_uuid"] = values[parent]
        placement.call("POST", "/resource_providers", body)
        if aggs:
            set_aggregates(placement, values[key], [values[agg] for agg in aggs])
    elif kind == "aggs":
        set_aggregates(placement, values[step[1]], [values[agg] for agg in step[2]])
    elif kind == "inv":
        _, key, resource_class, total, options = step
        provider = values[key]
        if resource_class.startswith("CUSTOM_"):
            placement.call("PUT", f"/resource_classes/{resource_class}", version="1.7")
        body = {"resource_class": resource_class, "total": total, "max_unit": total,
                "resource_provider_generation": placement.generation(provider)}
        body.update(options)
        placement.call("POST", f"/resource_providers/{provider}/inventories", body)
    elif kind == "traits":
        _, key, traits = step
        for name in traits:
            if name.startswith("CUSTOM_"):
                placement.call("PUT", f"/traits/{name}", version="1.6")
        provider = values[key]
        body = {"traits": traits, "resource_provider_generation": placement.generation(provider)}
        placement.call("PUT", f"/resource_providers/{provider}/traits", body)
    elif kind == "alloc":
        _, key, resources, user, project, consumer_var = step
        consumer = str(uuid.uuid4())
        if consumer_var:
            values[consumer_var] = consumer
        body = {"allocations": {values[key]: {"resources": resources}},
                "project_id": value(project), "user_id": value(user), "consumer_generation": None}
        placement.call("PUT", f"/allocations/{consumer}", body, version="1.28")
    else:
        raise SystemExit(f"fixtures: unknown step {step!r}")


def set_aggregates(placement, provider, aggregates):
    # Before 1.19 the body is the list and the generation is not bumped, as in-process.
    placement.call("PUT", f"/resource_providers/{provider}/aggregates", aggregates, version="1.18")


def fixture_of(path):
    """The first fixture a gabbit file names."""
    lines = open(path, encoding="utf-8").read().split("\n")
    for index, line in enumerate(lines):
        if re.match(r"^fixtures:\s*$", line):
            for following in lines[index + 1:]:
                found = re.match(r"^\s*-\s*([A-Za-z]+)\s*$", following)
                if found:
                    return found.group(1)
                if following.strip() and not following.lstrip().startswith("#"):
                    break
    return "APIFixture"


def main(argv):
    if len(argv) == 3 and argv[1] == "--fixture-of":
        print(fixture_of(argv[2]))
        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    for name, value in make(argv[1], argv[2]).items():
        print(f"{name}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
