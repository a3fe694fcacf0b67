//! The node listing: one page at a time by marker, or every page, with only the fields
//! ringmaster reads.

use serde::Deserialize;
use uuid::Uuid;

use super::{
    ApiVersion, IronicApi, IronicError, IronicNodeRecord, NODE_FIELDS, NodeSelection, PAGE_SIZE,
};

#[derive(Deserialize)]
struct NodePage {
    nodes: Vec<IronicNodeRecord>,
    next: Option<String>,
}

/// One page of a listing.
#[derive(Debug)]
pub struct ListedPage {
    pub nodes: Vec<IronicNodeRecord>,
    /// The marker of the next page, when there is one.
    pub next: Option<Uuid>,
    /// How long Ironic took to send it (the request and the body, not its parsing).
    pub waited: std::time::Duration,
}

impl IronicApi {
    /// The fields a listing reads: with `network_data` from API 1.66 and `shard` from 1.82
    /// (an older Ironic refuses a field it does not know).
    pub(super) fn node_fields(&self) -> String {
        let mut fields = NODE_FIELDS.to_owned();
        if self.version >= ApiVersion(1, 66) {
            fields.push_str(",network_data");
        }
        if self.version >= ApiVersion(1, 82) {
            fields.push_str(",shard");
        }
        fields
    }

    /// One page of the nodes `selection` chooses, after `marker` (the last node of the page
    /// before): its nodes, and the marker of the next page when there is one (a full page
    /// with a `next` link).
    pub async fn list_page(
        &self,
        selection: &NodeSelection,
        marker: Option<Uuid>,
    ) -> Result<ListedPage, IronicError> {
        if selection.shard.is_some() && self.max_version < ApiVersion(1, 82) {
            return Err(IronicError::NoShards {
                url: self.base.clone(),
                max: self.max_version,
            });
        }
        let mut query = vec![
            ("fields", self.node_fields()),
            ("limit", PAGE_SIZE.to_string()),
        ];
        if let Some(group) = &selection.conductor_group {
            query.push(("conductor_group", group.clone()));
        }
        if let Some(shard) = &selection.shard {
            query.push(("shard", shard.clone()));
        }
        if let Some(marker) = marker {
            query.push(("marker", marker.to_string()));
        }
        let encoded =
            serde_urlencoded::to_string(&query).map_err(|error| IronicError::BadAnswer {
                what: "the node listing's query".to_owned(),
                reason: error.to_string(),
            })?;
        let what = "the node listing";
        let started = std::time::Instant::now();
        let body = self
            .answer(self.get(&format!("/nodes?{encoded}")), what)
            .await?
            .bytes()
            .await
            .map_err(|error| IronicError::BadAnswer {
                what: what.to_owned(),
                reason: error.to_string(),
            })?;
        let waited = started.elapsed();
        let page: NodePage =
            serde_json::from_slice(&body).map_err(|error| IronicError::BadAnswer {
                what: what.to_owned(),
                reason: error.to_string(),
            })?;
        let full = page.nodes.len() >= PAGE_SIZE && page.next.is_some();
        let next = page.nodes.last().map(|node| node.uuid).filter(|_| full);
        Ok(ListedPage {
            nodes: page.nodes,
            next,
            waited,
        })
    }

    /// Lists the nodes `selection` chooses, `PAGE_SIZE` at a time by marker, only the fields
    /// ringmaster uses; returns every page's nodes and how many requests it took.
    pub async fn list_nodes(
        &self,
        selection: &NodeSelection,
    ) -> Result<(Vec<IronicNodeRecord>, usize), IronicError> {
        let mut nodes = Vec::new();
        let mut requests = 0;
        let mut marker: Option<Uuid> = None;
        loop {
            let page = self.list_page(selection, marker).await?;
            requests += 1;
            nodes.extend(page.nodes);
            match page.next {
                Some(next) => marker = Some(next),
                None => return Ok((nodes, requests)),
            }
        }
    }
}
