//! A server's `addresses`, as Nova shows them (`{network: [{addr, version, OS-EXT-IPS:type,
//! OS-EXT-IPS-MAC:mac_addr}]}`). ringmaster manages no networking: a node's addresses are the
//! ones its operator gave it in Ironic's `network_data` (API 1.66; the network_data.json a
//! network-less bare-metal cloud puts in the machine's config drive); a simulated node has one
//! made up from its uuid (the database's `simulated_addresses`, migration 000020). Clients need
//! them: openstacksdk's cloud layer (and so Ansible) deletes a server that goes ACTIVE without
//! an address. Pure.

use serde_json::{Map, Value, json};

/// The network name of addresses without one.
const DEFAULT_NETWORK: &str = "baremetal";

/// Nova's addresses (JSON text) from a node's `network_data`; `None` when it gives none.
pub fn from_network_data(network_data: &Value) -> Option<String> {
    let macs: Map<String, Value> = network_data["links"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|link| {
            Some((
                link["id"].as_str()?.to_owned(),
                link["ethernet_mac_address"].clone(),
            ))
        })
        .collect();
    let mut addresses: Map<String, Value> = Map::new();
    for network in network_data["networks"].as_array().into_iter().flatten() {
        let Some(addr) = network["ip_address"].as_str() else {
            continue;
        };
        let Ok(ip) = addr.parse::<std::net::IpAddr>() else {
            continue;
        };
        let name = network["network_id"]
            .as_str()
            .or_else(|| network["id"].as_str())
            .unwrap_or(DEFAULT_NETWORK);
        let mac = network["link"]
            .as_str()
            .and_then(|link| macs.get(link))
            .cloned()
            .unwrap_or(Value::Null);
        let entry = json!({
            "addr": ip.to_string(),
            "version": if ip.is_ipv4() { 4 } else { 6 },
            "OS-EXT-IPS:type": "fixed",
            "OS-EXT-IPS-MAC:mac_addr": mac,
        });
        match addresses.get_mut(name).and_then(Value::as_array_mut) {
            Some(list) => list.push(entry),
            None => {
                addresses.insert(name.to_owned(), json!([entry]));
            }
        }
    }
    (!addresses.is_empty()).then(|| Value::Object(addresses).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_data_gives_each_network_its_addresses_with_the_link_s_mac() {
        let data = json!({
            "links": [{"id": "port0", "type": "phy", "ethernet_mac_address": "52:54:00:aa:bb:cc"}],
            "networks": [
                {"id": "net0", "type": "ipv4", "link": "port0", "ip_address": "192.0.2.10",
                 "netmask": "255.255.255.0", "network_id": "provisioning"},
                {"id": "net1", "type": "ipv6", "link": "port0", "ip_address": "2001:db8::10"},
                {"id": "net2", "type": "ipv4_dhcp", "link": "port0"},
            ],
        });
        let shown: Value = serde_json::from_str(&from_network_data(&data).unwrap()).unwrap();
        assert_eq!(
            shown["provisioning"][0],
            json!({"addr": "192.0.2.10", "version": 4, "OS-EXT-IPS:type": "fixed",
                   "OS-EXT-IPS-MAC:mac_addr": "52:54:00:aa:bb:cc"})
        );
        assert_eq!(shown["net1"][0]["version"], 6);
        assert_eq!(shown.as_object().unwrap().len(), 2, "DHCP gives no address");
    }

    #[test]
    fn no_addresses_is_none_and_garbage_is_ignored() {
        assert_eq!(from_network_data(&json!({})), None);
        assert_eq!(from_network_data(&json!("x")), None);
        assert_eq!(
            from_network_data(&json!({"networks": [{"ip_address": "not-an-ip"}]})),
            None
        );
    }
}
