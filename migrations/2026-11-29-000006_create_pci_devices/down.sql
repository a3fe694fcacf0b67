DROP TABLE pci_devices;
