#!/usr/bin/env python3
"""Writes src/domain/compute/extra_specs.txt: the flavor extra specs Nova 34.0.0 validates
(nova/api/validation/extra_specs), one per line as `name-regex<TAB>type<TAB>constraint`, where
type is int, str or bool and constraint is `enum:a|b`, `pattern:RE`, `range:MIN..MAX` or `-`.
The `resources` and `traits` namespaces are left out: ringmaster checks them against its own
lists of Placement's standard classes and traits. Run with a Python that has oslo_utils and
oslo_versionedobjects (the Ironic venv of scripts/ironic has both):

    PYTHON scripts/nova-extra-specs.py NOVA_WHEEL_DIR > src/domain/compute/extra_specs.txt

where NOVA_WHEEL_DIR holds the unpacked nova-34.0.0 wheel.
"""
import importlib
import sys
import types


def stub(name, **attributes):
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    sys.modules[name] = module
    return module


def package(name, root):
    module = stub(name)
    module.__path__ = [f"{root}/{name.replace('.', '/')}"]


def main(root):
    sys.path.insert(0, root)
    for name in ["nova", "nova.api", "nova.api.validation", "nova.api.validation.extra_specs",
                 "nova.objects"]:
        package(name, root)

    class ValidationError(Exception):
        pass

    stub("nova.exception", ValidationError=ValidationError)
    stub("nova.i18n", _=lambda text: text)
    stub("os_resource_classes", STANDARDS=[])
    hashes = {"SHA-224": 1, "SHA-256": 1, "SHA-384": 1, "SHA-512": 1}
    signature = stub("cursive.signature_utils", HASH_METHODS=hashes,
                     SIGNATURE_KEY_TYPES=["RSA-PSS", "DSA", "ECC_SECT571K1"])
    stub("cursive", signature_utils=signature)
    vif_models = {f"VIF_MODEL_{n}": n.lower() for n in
                  ["E1000", "E1000E", "LAN9118", "NETFRONT", "NE2K_PCI", "PCNET", "RTL8139",
                   "VIRTIO", "SMC91C111", "SPAPR_VLAN", "IGB", "VMXNET", "VMXNET3", "SRIOV", "XEN"]}
    model = stub("nova.network.model", VIF_MODEL_ALL=tuple(vif_models.values()), **vif_models)
    stub("nova.network", model=model)
    kinds = {int: "int", str: "str", bool: "bool"}
    for name in ["accel", "aggregate_instance_extra_specs", "capabilities", "hw", "hw_rng",
                 "hw_video", "null", "os", "pci_passthrough", "quota", "vmware"]:
        module = importlib.import_module(f"nova.api.validation.extra_specs.{name}")
        for validator in module.register():
            value = validator.value
            if value.get("enum"):
                constraint = "enum:" + "|".join(str(v) for v in value["enum"])
            elif value.get("pattern"):
                constraint = "pattern:" + value["pattern"]
            elif "min" in value or "max" in value:
                constraint = f"range:{value.get('min', '')}..{value.get('max', '')}"
            else:
                constraint = "-"
            print(validator.name_regex, kinds[value["type"]], constraint, sep="\t")


if __name__ == "__main__":
    main(sys.argv[1])
