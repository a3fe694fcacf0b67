//! A deployment of actors on a manual clock, started the production way
//! (`app::start_deployment`) and driven by messages.

use super::app::test_deployment_config;
use super::database::TestDb;

/// A deployment of actors on a manual clock and a database of its own, driven by messages.
pub struct TestDeployment {
    pub actors: ringmaster::actors::Actors,
    pub clock: std::sync::Arc<ringmaster::domain::clock::ManualClock>,
    pub db: TestDb,
}

impl TestDeployment {
    /// Starts `hosts`, enrolls `nodes` nodes of class `baremetal`, gives them owners and runs
    /// every host's tracker pass; the invariants hold at the end.
    pub async fn start(hosts: &[&str], nodes: usize) -> TestDeployment {
        let deployment = Self::start_with(test_deployment_config(hosts)).await;
        if nodes > 0 {
            deployment.enroll(nodes).await;
            let report = deployment.rebalance().await;
            assert_eq!(
                report.claimed.len(),
                nodes,
                "every node gets its first owner"
            );
            deployment.track(hosts).await;
            // The refreshes the claims queued (NodesAssigned) may run after that pass: a second
            // one comes after them, so no pass is left to run behind a test's back.
            deployment.track(hosts).await;
        }
        deployment.audit();
        deployment
    }

    /// Starts `config`'s hosts the production way (`app::start_deployment`) on a manual clock
    /// and a database of their own, and has each heartbeat once.
    pub async fn start_with(config: ringmaster::config::DeploymentConfig) -> TestDeployment {
        let db = TestDb::new();
        let pool = db.pool();
        let clock = std::sync::Arc::new(ringmaster::domain::clock::ManualClock::new(
            chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
        ));
        let actors = ringmaster::app::start_deployment(pool, clock.clone(), &config)
            .await
            .expect("start the deployment");
        let deployment = TestDeployment { actors, clock, db };
        let hosts: Vec<&str> = config.hosts.iter().map(String::as_str).collect();
        deployment.heartbeat(&hosts).await;
        deployment
    }

    /// Serves the admin API and Placement of this deployment on a random loopback port;
    /// returns its address (`http://127.0.0.1:PORT`). The server stops with the test's system.
    pub fn serve(&self) -> String {
        self.serve_configured(|_| {})
    }

    /// `serve` with the settings `configure` changed.
    pub fn serve_configured(
        &self,
        configure: impl FnOnce(&mut ringmaster::config::ServerConfig),
    ) -> String {
        let mut config = ringmaster::config::ServerConfig {
            bind: "127.0.0.1:0".to_owned(),
            admin_token: None,
            placement: Default::default(),
            handle_signals: false,
            database_grace: std::time::Duration::from_secs(60),
            allowed_hosts: Vec::new(),
            event_streams: Default::default(),
            body_timeout: std::time::Duration::from_secs(15),
            keystone: None,
            images: Default::default(),
            access: Default::default(),
            hangup: Default::default(),
            listener: Default::default(),
        };
        configure(&mut config);
        let application =
            ringmaster::app::Application::build(&config, self.db.pool(), self.actors.clone())
                .expect("bind the server");
        let address = format!("http://{}", application.local_addr());
        actix_rt::spawn(application.run_until_stopped(None));
        address
    }

    pub async fn enroll(&self, count: usize) -> Vec<uuid::Uuid> {
        use ringmaster::db::ironic::NewIronicNode;
        let nodes: Vec<NewIronicNode> = (0..count)
            .map(|index| {
                NewIronicNode::enrolling(
                    uuid::Uuid::new_v4(),
                    Some(format!("node-{index}")),
                    "baremetal",
                )
            })
            .collect();
        let uuids = nodes.iter().map(|node| node.uuid).collect();
        self.actors
            .ironic
            .send(ringmaster::actors::ironic::EnrollNodes { nodes })
            .await
            .unwrap()
            .unwrap();
        uuids
    }

    /// Sends a heartbeat to each host and checks that it was recorded.
    pub async fn heartbeat(&self, hosts: &[&str]) {
        for host in hosts {
            let address = self
                .actors
                .hosts
                .get(host)
                .unwrap_or_else(|| panic!("host {host} runs"));
            let recorded = address
                .send(ringmaster::actors::compute_host::Heartbeat)
                .await
                .unwrap()
                .unwrap();
            assert!(recorded, "heartbeat of {host} recorded");
        }
    }

    /// Runs each host's tracker pass; every pass must succeed.
    pub async fn track(
        &self,
        hosts: &[&str],
    ) -> Vec<ringmaster::actors::compute_host::TrackerReport> {
        let mut reports = Vec::new();
        for host in hosts {
            let address = self.actors.hosts.get(host).unwrap();
            let report = address
                .send(ringmaster::actors::compute_host::UpdateAvailableResource)
                .await
                .unwrap()
                .unwrap_or_else(|error| panic!("tracker pass of {host}: {error}"));
            reports.push(report);
        }
        reports
    }

    pub async fn rebalance(&self) -> ringmaster::actors::rebalancer::RebalanceReport {
        let report = self
            .actors
            .rebalancer
            .send(ringmaster::actors::rebalancer::RebalanceNow)
            .await
            .unwrap()
            .unwrap();
        assert!(report.leader, "the only rebalancer leads");
        report
    }

    /// The rebalancer lease this deployment leads under (it must lead).
    pub async fn lease(&self) -> ringmaster::db::leases::LeaseToken {
        let ring = self
            .actors
            .rebalancer
            .send(ringmaster::actors::rebalancer::GetRing)
            .await
            .unwrap();
        ringmaster::db::leases::LeaseToken {
            holder: self.actors.process,
            epoch: ring.lease_epoch.expect("this deployment leads"),
        }
    }

    pub fn clock_now(&self) -> chrono::DateTime<chrono::Utc> {
        use ringmaster::domain::clock::Clock;
        self.clock.now()
    }

    pub fn advance(&self, seconds: i64) {
        self.clock.advance(chrono::Duration::seconds(seconds));
    }

    /// Panics naming every broken invariant (time judged by the deployment's manual clock).
    pub fn audit(&self) {
        let mut conn = self.db.conn();
        let clock = self.actors.settings.audit_clock(self.clock_now());
        let violations = ringmaster::db::audit::check_invariants_at(&mut conn, clock).unwrap();
        assert!(violations.is_empty(), "invariants broken: {violations:#?}");
    }

    pub fn nodes(&self) -> Vec<ringmaster::db::node_views::NodeView> {
        ringmaster::db::node_views::list_node_views(&mut self.db.conn()).unwrap()
    }

    /// Each node's compute-node and provider uuid.
    pub fn identities(
        &self,
    ) -> std::collections::BTreeMap<uuid::Uuid, (Option<uuid::Uuid>, Option<uuid::Uuid>)> {
        self.nodes()
            .into_iter()
            .map(|node| {
                (
                    node.uuid,
                    (node.compute_node_uuid, node.resource_provider_uuid),
                )
            })
            .collect()
    }

    pub fn owner_of(&self, node: &str) -> Option<String> {
        self.nodes()
            .into_iter()
            .find(|view| view.uuid.to_string() == node)
            .and_then(|view| view.host)
    }

    pub async fn boot(
        &self,
        name: &str,
    ) -> Result<ringmaster::domain::instance::Instance, ringmaster::actors::scheduler::BootError>
    {
        self.boot_with_devices(name, 0).await
    }

    pub async fn boot_with_devices(
        &self,
        name: &str,
        pci_devices: u32,
    ) -> Result<ringmaster::domain::instance::Instance, ringmaster::actors::scheduler::BootError>
    {
        self.actors
            .scheduler
            .send(boot_request(name, pci_devices))
            .await
            .unwrap()
    }

    /// How many nodes `host` owns.
    pub fn owner_count(&self, host: &str) -> usize {
        self.nodes()
            .iter()
            .filter(|node| node.host.as_deref() == Some(host))
            .count()
    }

    /// Allocations as (consumer, provider uuid, used), sorted.
    pub fn allocations(&self) -> Vec<(uuid::Uuid, uuid::Uuid, i32)> {
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Uuid)]
            consumer: uuid::Uuid,
            #[diesel(sql_type = diesel::sql_types::Uuid)]
            provider: uuid::Uuid,
            #[diesel(sql_type = diesel::sql_types::Integer)]
            used: i32,
        }
        use diesel::RunQueryDsl;
        diesel::sql_query(
            "SELECT a.consumer_id AS consumer, rp.uuid AS provider, a.used FROM allocations a
               JOIN resource_providers rp ON rp.id = a.resource_provider_id ORDER BY 1, 2",
        )
        .load::<Row>(&mut self.db.conn())
        .unwrap()
        .into_iter()
        .map(|row| (row.consumer, row.provider, row.used))
        .collect()
    }
}

/// A boot of one `baremetal` node named `name` with `pci_devices` PCI devices.
pub fn boot_request(name: &str, pci_devices: u32) -> ringmaster::actors::scheduler::Boot {
    ringmaster::actors::scheduler::Boot {
        uuid: None,
        name: name.to_owned(),
        project: "project".to_owned(),
        user: "user".to_owned(),
        request: ringmaster::domain::boot::BootRequest::of_class("baremetal", pci_devices),
        answer_when_claimed: false,
    }
}

impl TestDeployment {
    /// Every inventory: (provider, class, total, reserved), by provider and class.
    pub fn inventories(&self) -> Vec<(uuid::Uuid, String, i32, i32)> {
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Uuid)]
            provider: uuid::Uuid,
            #[diesel(sql_type = diesel::sql_types::Text)]
            class: String,
            #[diesel(sql_type = diesel::sql_types::Integer)]
            total: i32,
            #[diesel(sql_type = diesel::sql_types::Integer)]
            reserved: i32,
        }
        use diesel::RunQueryDsl;
        diesel::sql_query(
            "SELECT rp.uuid AS provider, rc.name::text AS class, i.total, i.reserved
               FROM inventories i JOIN resource_providers rp ON rp.id = i.resource_provider_id
               JOIN resource_classes rc ON rc.id = i.resource_class_id ORDER BY 1, 2",
        )
        .load::<Row>(&mut self.db.conn())
        .unwrap()
        .into_iter()
        .map(|row| (row.provider, row.class, row.total, row.reserved))
        .collect()
    }

    /// The traits of provider `provider`, sorted.
    pub fn provider_traits(&self, provider: uuid::Uuid) -> Vec<String> {
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Text)]
            name: String,
        }
        use diesel::RunQueryDsl;
        diesel::sql_query(
            "SELECT t.name::text AS name FROM resource_provider_traits rpt
               JOIN traits t ON t.id = rpt.trait_id
               JOIN resource_providers rp ON rp.id = rpt.resource_provider_id
              WHERE rp.uuid = $1 ORDER BY 1",
        )
        .bind::<diesel::sql_types::Uuid, _>(provider)
        .load::<Row>(&mut self.db.conn())
        .unwrap()
        .into_iter()
        .map(|row| row.name)
        .collect()
    }
}
