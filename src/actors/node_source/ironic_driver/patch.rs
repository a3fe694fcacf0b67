//! What Nova's ironic driver's patcher writes into a node's `instance_info` for a server of
//! the Compute API, beyond the image ringmaster's deploy always sends.

use crate::actors::node_source::ServerDeploy;
use crate::ironic_api::PatchOp;

/// The `instance_info` Nova's patcher adds for a server of the Compute API.
pub(super) fn server_patch(server: &ServerDeploy) -> Vec<PatchOp> {
    let mut ops = vec![
        PatchOp::add("/instance_info/swap_mb", serde_json::json!(server.swap_mb)),
        PatchOp::add(
            "/instance_info/ephemeral_gb",
            serde_json::json!(server.ephemeral_gb),
        ),
        PatchOp::add(
            "/instance_info/project_id",
            serde_json::json!(server.project_id),
        ),
        PatchOp::add("/instance_info/user_id", serde_json::json!(server.user_id)),
    ];
    if !server.capabilities.is_empty() {
        // Nova sends the capabilities as a JSON string.
        let text = serde_json::Value::Object(server.capabilities.clone()).to_string();
        ops.push(PatchOp::add(
            "/instance_info/capabilities",
            serde_json::json!(text),
        ));
    }
    for (field, value) in &server.image {
        ops.push(PatchOp::add(
            &format!("/instance_info/{field}"),
            value.clone(),
        ));
    }
    if !server.traits.is_empty() {
        ops.push(PatchOp::add(
            "/instance_info/traits",
            serde_json::json!(server.traits),
        ));
    }
    ops
}
