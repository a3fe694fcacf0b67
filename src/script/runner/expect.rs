//! The `expect` step: each fact a script may state, checked against the database, the
//! log and what earlier steps saved. One function per fact; the first that does not hold
//! fails the step.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Run, StepResult, capture, parse_uuid};
use crate::db;
use crate::db::instances::NodeRequest;
use crate::db::node_views::NodeView;
use crate::domain::boot::BootRequest;
use crate::domain::clock::Clock;
use crate::domain::identity::InstanceUuid;
use crate::script::format::{Facts, LogSince, RowsFact, Snapshot};

impl Run {
    /// Checks every fact `facts` states.
    pub(super) async fn expect(&mut self, facts: &Facts) -> StepResult<()> {
        let nodes = db::run(&self.pool, db::node_views::list_node_views)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(expected) = &facts.nodes_on {
            self.expect_nodes_on(&nodes, expected)?;
        }
        if let Some(hosts) = &facts.all_nodes_on {
            self.expect_all_nodes_on(&nodes, hosts)?;
        }
        if let Some(names) = &facts.unchanged {
            self.expect_unchanged(names).await?;
        }
        if let Some(fields) = &facts.instance {
            self.expect_instance(fields).await?;
        }
        if let Some(owner) = &facts.owner {
            self.expect_owner(&nodes, owner)?;
        }
        if let Some(states) = &facts.host_state {
            self.expect_host_states(states).await?;
        }
        if let Some(rows) = &facts.rows {
            self.expect_rows(rows).await?;
        }
        if let Some(expected) = facts.free_nodes {
            self.expect_free_nodes(expected).await?;
        }
        if facts.log.is_some() || facts.log_absent.is_some() {
            self.expect_log(facts)?;
        }
        Ok(())
    }

    fn expect_nodes_on(
        &self,
        nodes: &[NodeView],
        expected: &BTreeMap<String, usize>,
    ) -> StepResult<()> {
        for (host, count) in expected {
            let host = self.interpolate(host)?;
            let actual = nodes
                .iter()
                .filter(|node| node.host.as_deref() == Some(host.as_str()))
                .count();
            if actual != *count {
                return Err(format!("nodes on {host}: expected {count}, got {actual}"));
            }
        }
        Ok(())
    }

    fn expect_all_nodes_on(&self, nodes: &[NodeView], hosts: &[String]) -> StepResult<()> {
        let hosts: Vec<String> = hosts
            .iter()
            .map(|host| self.interpolate(host))
            .collect::<Result<_, _>>()?;
        if let Some(stray) = nodes
            .iter()
            .find(|node| !node.host.as_ref().is_some_and(|host| hosts.contains(host)))
        {
            return Err(format!(
                "node {} is on {:?}, expected one of {hosts:?}",
                stray.uuid, stray.host
            ));
        }
        Ok(())
    }

    async fn expect_unchanged(&self, names: &[String]) -> StepResult<()> {
        for name in names {
            let saved = self
                .vars
                .get(name)
                .cloned()
                .ok_or_else(|| format!("nothing saved as {name}"))?;
            let kind: Snapshot = serde_json::from_value(saved["kind"].clone())
                .map_err(|_| format!("{name} is not a saved snapshot"))?;
            let now = self.snapshot(kind).await?;
            if now != saved["value"] {
                return Err(format!(
                    "{name} changed: expected {}, got {now}",
                    saved["value"]
                ));
            }
        }
        Ok(())
    }

    async fn expect_instance(&self, fields: &BTreeMap<String, String>) -> StepResult<()> {
        let uuid = InstanceUuid(parse_uuid(
            &self.interpolate(fields.get("uuid").ok_or("instance needs a uuid")?)?,
        )?);
        let instance = db::run(&self.pool, move |conn| {
            db::instances::get_instance(conn, uuid)
        })
        .await
        .map_err(|e| e.to_string())?;
        let actual = json!({"uuid": instance.uuid, "host": instance.host, "node": instance.node,
                            "vm_state": instance.vm_state, "name": instance.name});
        for (field, expected) in fields {
            let expected = self.interpolate(expected)?;
            let value = actual.get(field).cloned().unwrap_or(Value::Null);
            if value.as_str() != Some(expected.as_str()) {
                return Err(format!(
                    "instance {uuid} {field}: expected {expected}, got {value}"
                ));
            }
        }
        Ok(())
    }

    fn expect_owner(&self, nodes: &[NodeView], owner: &BTreeMap<String, Value>) -> StepResult<()> {
        let field = |name: &str| -> StepResult<Option<String>> {
            owner
                .get(name)
                .map(|value| match value {
                    Value::String(text) => self.interpolate(text),
                    other => Ok(other.to_string()),
                })
                .transpose()
        };
        let node = field("node")?.ok_or("owner needs a node")?;
        let host = field("host")?.ok_or("owner needs a host")?;
        let view = nodes.iter().find(|view| view.uuid.to_string() == node);
        let actual = view.and_then(|view| view.host.clone());
        if actual.as_deref() != Some(host.as_str()) {
            return Err(format!(
                "owner of node {node}: expected {host}, got {actual:?}"
            ));
        }
        if let Some(epoch) = field("epoch")? {
            let actual = view.and_then(|view| view.owner_epoch);
            if actual.map(|epoch| epoch.to_string()).as_deref() != Some(epoch.as_str()) {
                return Err(format!(
                    "owner epoch of node {node}: expected {epoch}, got {actual:?}"
                ));
            }
        }
        Ok(())
    }

    async fn expect_host_states(&self, states: &BTreeMap<String, String>) -> StepResult<()> {
        let hosts = db::run(&self.pool, db::hosts::list_hosts)
            .await
            .map_err(|e| e.to_string())?;
        let now = self.clock.now();
        let liveness = self.actors.settings.host.liveness;
        for (name, expected) in states {
            let name = self.interpolate(name)?;
            let actual = hosts
                .iter()
                .find(|host| host.name == name)
                .map(|host| host.state(&liveness, now).as_str())
                .unwrap_or("unknown");
            if actual != expected {
                return Err(format!(
                    "state of host {name}: expected {expected}, got {actual}"
                ));
            }
        }
        Ok(())
    }

    async fn expect_rows(&self, rows: &RowsFact) -> StepResult<()> {
        for filter in rows.filters() {
            if !crate::script::format::COUNTABLE_TABLES.contains(&filter.table.as_str()) {
                return Err(format!("cannot count rows of {}", filter.table));
            }
            let conditions = self.conditions(&filter.filter)?;
            let table = filter.table.clone();
            let actual = db::run(&self.pool, move |conn| {
                db::count_matching(conn, &table, &conditions)
            })
            .await
            .map_err(|e| e.to_string())?;
            if actual != filter.count {
                let which = if filter.filter.is_empty() {
                    String::new()
                } else {
                    format!(
                        " where {}",
                        Value::from(serde_json::Map::from_iter(filter.filter.clone()))
                    )
                };
                return Err(format!(
                    "rows of {}{which}: expected {}, got {actual}",
                    filter.table, filter.count
                ));
            }
        }
        Ok(())
    }

    async fn expect_free_nodes(&self, expected: usize) -> StepResult<()> {
        let now = self.clock.now();
        let judge = self.actors.judge();
        let cooling_after = self.actors.settings.host.cooling_after(now);
        let free = db::run(&self.pool, move |conn| {
            let boot = BootRequest::of_class("baremetal", 0);
            let up = boot.hosts(db::hosts::list_hosts(conn)?, &judge, now);
            let request = NodeRequest {
                boot: &boot,
                hosts: &up,
                cooling_after,
            };
            db::instances::free_nodes(conn, &request, i32::MAX)
        })
        .await
        .map_err(|e| e.to_string())?;
        if free.len() != expected {
            return Err(format!(
                "free nodes: expected {expected}, got {}",
                free.len()
            ));
        }
        Ok(())
    }

    fn expect_log(&self, facts: &Facts) -> StepResult<()> {
        let since = match facts.log_since.unwrap_or(LogSince::Script) {
            LogSince::Script => self.log_mark,
            LogSince::Step => self.step_marks.0,
        };
        let Some(mark) = since else {
            return Err("log lines are not captured in this process".to_owned());
        };
        let lines = capture::lines_since(mark);
        let scope = match facts.log_since {
            Some(LogSince::Step) => "the previous step started",
            _ => "the script started",
        };
        if let Some(text) = &facts.log {
            let text = self.interpolate(text)?;
            if !lines.iter().any(|line| line.contains(text.as_str())) {
                return Err(format!("no log line containing {text:?} since {scope}"));
            }
        }
        if let Some(text) = &facts.log_absent {
            let text = self.interpolate(text)?;
            if let Some(line) = lines.iter().find(|line| line.contains(text.as_str())) {
                return Err(format!(
                    "a log line contains {text:?} since {scope}: {line}"
                ));
            }
        }
        Ok(())
    }
}
