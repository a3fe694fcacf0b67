-- A node's addresses as a server's `addresses` shows them (issue 26; Nova's shape, JSON text).
-- ringmaster manages no networking: a real Ironic node's addresses are the ones its operator
-- gave it in network_data (Ironic API 1.66), mirrored here; NULL when it has none.
ALTER TABLE ironic_nodes ADD COLUMN addresses TEXT;

-- A simulated node's made-up address, stable for its uuid: 10.x.y.z on network `baremetal`
-- with a locally administered MAC, from the uuid's last three bytes. Clients need one:
-- openstacksdk's cloud layer (and so Ansible) deletes a server that is ACTIVE without one.
CREATE FUNCTION simulated_addresses(node uuid) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT json_build_object('baremetal', json_build_array(json_build_object(
               'addr', format('10.%s.%s.%s', get_byte(b, 13), get_byte(b, 14), get_byte(b, 15)),
               'version', 4,
               'OS-EXT-IPS:type', 'fixed',
               'OS-EXT-IPS-MAC:mac_addr', format('52:54:00:%s:%s:%s',
                   lpad(to_hex(get_byte(b, 13)), 2, '0'), lpad(to_hex(get_byte(b, 14)), 2, '0'),
                   lpad(to_hex(get_byte(b, 15)), 2, '0')))))::text
      FROM (SELECT uuid_send(node) AS b) AS bytes
$$;
