// @generated automatically by Diesel CLI.

diesel::table! {
    allocations (id) {
        id -> Int8,
        resource_provider_id -> Int8,
        consumer_id -> Uuid,
        resource_class_id -> Int4,
        used -> Int4,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    archive_runs (id) {
        id -> Int8,
        started_at -> Timestamptz,
        finished_at -> Nullable<Timestamptz>,
        options -> Jsonb,
        tables -> Jsonb,
        total_rows -> Int8,
        purged_rows -> Int8,
        #[max_length = 16]
        status -> Varchar,
    }
}

diesel::table! {
    block_device_mapping (id) {
        id -> Int8,
        uuid -> Uuid,
        instance_uuid -> Uuid,
        #[max_length = 255]
        device_name -> Nullable<Varchar>,
        #[max_length = 255]
        source_type -> Nullable<Varchar>,
        #[max_length = 255]
        destination_type -> Nullable<Varchar>,
        #[max_length = 36]
        volume_id -> Nullable<Varchar>,
        volume_size -> Nullable<Int4>,
        boot_index -> Nullable<Int4>,
        delete_on_termination -> Bool,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    compute_nodes (id) {
        id -> Int8,
        uuid -> Uuid,
        #[max_length = 255]
        host -> Varchar,
        #[max_length = 255]
        hypervisor_hostname -> Varchar,
        #[max_length = 255]
        hypervisor_type -> Varchar,
        hypervisor_version -> Int4,
        owner_epoch -> Int8,
        service_id -> Nullable<Int8>,
        vcpus -> Int4,
        memory_mb -> Int4,
        local_gb -> Int4,
        vcpus_used -> Int4,
        memory_mb_used -> Int4,
        local_gb_used -> Int4,
        running_vms -> Int4,
        cpu_allocation_ratio -> Float8,
        ram_allocation_ratio -> Float8,
        disk_allocation_ratio -> Float8,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    consumer_types (id) {
        id -> Int4,
        #[max_length = 255]
        name -> Varchar,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    consumers (id) {
        id -> Int8,
        uuid -> Uuid,
        project_id -> Int8,
        user_id -> Int8,
        generation -> Int8,
        consumer_type_id -> Nullable<Int4>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    flavor_extra_specs (flavor_id, key) {
        flavor_id -> Int8,
        #[max_length = 255]
        key -> Varchar,
        #[max_length = 255]
        value -> Varchar,
    }
}

diesel::table! {
    flavor_projects (flavor_id, project_id) {
        flavor_id -> Int8,
        #[max_length = 255]
        project_id -> Varchar,
    }
}

diesel::table! {
    flavors (id) {
        id -> Int8,
        #[max_length = 255]
        flavorid -> Varchar,
        #[max_length = 255]
        name -> Varchar,
        memory_mb -> Int4,
        vcpus -> Int4,
        root_gb -> Int4,
        ephemeral_gb -> Int4,
        swap -> Int4,
        rxtx_factor -> Float8,
        disabled -> Bool,
        is_public -> Bool,
        description -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    instance_actions (id) {
        id -> Int8,
        #[max_length = 255]
        action -> Varchar,
        instance_uuid -> Uuid,
        #[max_length = 255]
        request_id -> Nullable<Varchar>,
        #[max_length = 255]
        user_id -> Nullable<Varchar>,
        #[max_length = 255]
        project_id -> Nullable<Varchar>,
        start_time -> Nullable<Timestamptz>,
        finish_time -> Nullable<Timestamptz>,
        #[max_length = 255]
        message -> Nullable<Varchar>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    instance_actions_events (id) {
        id -> Int8,
        #[max_length = 255]
        event -> Varchar,
        action_id -> Int8,
        start_time -> Nullable<Timestamptz>,
        finish_time -> Nullable<Timestamptz>,
        #[max_length = 255]
        result -> Nullable<Varchar>,
        traceback -> Nullable<Text>,
        #[max_length = 255]
        host -> Nullable<Varchar>,
        details -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    instance_extra (id) {
        id -> Int8,
        instance_uuid -> Uuid,
        numa_topology -> Nullable<Text>,
        pci_requests -> Nullable<Text>,
        flavor -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
        image -> Nullable<Text>,
    }
}

diesel::table! {
    instance_faults (id) {
        id -> Int8,
        instance_uuid -> Uuid,
        code -> Int4,
        #[max_length = 255]
        message -> Nullable<Varchar>,
        details -> Nullable<Text>,
        #[max_length = 255]
        host -> Nullable<Varchar>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    instance_system_metadata (id) {
        id -> Int8,
        instance_uuid -> Uuid,
        #[max_length = 255]
        key -> Varchar,
        #[max_length = 255]
        value -> Nullable<Varchar>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    instances (id) {
        id -> Int8,
        uuid -> Uuid,
        #[max_length = 255]
        display_name -> Nullable<Varchar>,
        #[max_length = 255]
        project_id -> Varchar,
        #[max_length = 255]
        user_id -> Varchar,
        #[max_length = 255]
        host -> Nullable<Varchar>,
        #[max_length = 255]
        node -> Nullable<Varchar>,
        #[max_length = 255]
        resource_class -> Nullable<Varchar>,
        #[max_length = 255]
        vm_state -> Varchar,
        #[max_length = 255]
        task_state -> Nullable<Varchar>,
        power_state -> Int4,
        memory_mb -> Int4,
        vcpus -> Int4,
        root_gb -> Int4,
        launched_at -> Nullable<Timestamptz>,
        terminated_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
        #[max_length = 255]
        image_ref -> Nullable<Varchar>,
        #[max_length = 255]
        key_name -> Nullable<Varchar>,
        key_data -> Nullable<Text>,
        user_data -> Nullable<Text>,
        #[max_length = 255]
        config_drive -> Nullable<Varchar>,
        #[max_length = 255]
        availability_zone -> Nullable<Varchar>,
    }
}

diesel::table! {
    inventories (id) {
        id -> Int8,
        resource_provider_id -> Int8,
        resource_class_id -> Int4,
        total -> Int4,
        reserved -> Int4,
        min_unit -> Int4,
        max_unit -> Int4,
        step_size -> Int4,
        allocation_ratio -> Float8,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    ironic_nodes (id) {
        id -> Int8,
        uuid -> Uuid,
        #[max_length = 255]
        name -> Nullable<Varchar>,
        #[max_length = 80]
        resource_class -> Varchar,
        #[max_length = 40]
        provision_state -> Varchar,
        #[max_length = 40]
        power_state -> Nullable<Varchar>,
        maintenance -> Bool,
        maintenance_reason -> Nullable<Text>,
        instance_uuid -> Nullable<Uuid>,
        #[max_length = 255]
        reservation -> Nullable<Varchar>,
        last_error -> Nullable<Text>,
        cpus -> Int4,
        memory_mb -> Int4,
        local_gb -> Int4,
        #[max_length = 255]
        conductor_group -> Varchar,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        traits -> Array<Nullable<Text>>,
        #[max_length = 16]
        source -> Varchar,
        first_owned_at -> Nullable<Timestamptz>,
        addresses -> Nullable<Text>,
        #[max_length = 255]
        shard -> Nullable<Varchar>,
        listed -> Bool,
    }
}

diesel::table! {
    instance_builds (instance_uuid) {
        instance_uuid -> Uuid,
        alternates -> Array<Nullable<Uuid>>,
        attempts -> Int4,
        max_attempts -> Int4,
        failures -> Array<Nullable<Text>>,
        tried -> Array<Nullable<Text>>,
        #[max_length = 255]
        placement_class -> Varchar,
        pci_devices -> Int4,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    ironic_listings (name) {
        #[max_length = 64]
        name -> Varchar,
        holder -> Uuid,
        at -> Timestamptz,
        last_success -> Nullable<Timestamptz>,
        nodes -> Int8,
        pages -> Int8,
        changed -> Int8,
        took_ms -> Int8,
        held -> Int8,
        error -> Nullable<Text>,
        listings -> Int8,
    }
}

diesel::table! {
    key_pairs (id) {
        id -> Int8,
        #[max_length = 255]
        name -> Varchar,
        #[max_length = 255]
        user_id -> Varchar,
        #[max_length = 255]
        fingerprint -> Varchar,
        public_key -> Text,
        #[max_length = 16]
        #[sql_name = "type"]
        type_ -> Varchar,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    leader_leases (name) {
        #[max_length = 64]
        name -> Varchar,
        holder -> Uuid,
        epoch -> Int8,
        expires_at -> Timestamptz,
        acquired_at -> Timestamptz,
    }
}

diesel::table! {
    move_batches (id) {
        id -> Int8,
        moved_at -> Timestamptz,
        #[max_length = 16]
        reason -> Varchar,
        #[max_length = 255]
        host -> Varchar,
        nodes -> Int8,
        counterparts -> Jsonb,
    }
}

diesel::table! {
    node_moves (id) {
        id -> Int8,
        compute_node_uuid -> Uuid,
        #[max_length = 255]
        hypervisor_hostname -> Varchar,
        #[max_length = 255]
        from_host -> Nullable<Varchar>,
        #[max_length = 255]
        to_host -> Varchar,
        #[max_length = 16]
        reason -> Varchar,
        owner_epoch -> Int8,
        ring_version -> Int8,
        moved_at -> Timestamptz,
    }
}

diesel::table! {
    ownership_epochs (shard) {
        shard -> Int4,
        n -> Int8,
    }
}

diesel::table! {
    pci_devices (id) {
        id -> Int8,
        compute_node_id -> Int8,
        #[max_length = 12]
        address -> Varchar,
        #[max_length = 4]
        vendor_id -> Varchar,
        #[max_length = 4]
        product_id -> Varchar,
        #[max_length = 8]
        dev_type -> Varchar,
        #[max_length = 255]
        dev_id -> Nullable<Varchar>,
        #[max_length = 255]
        label -> Varchar,
        #[max_length = 36]
        status -> Varchar,
        extra_info -> Nullable<Text>,
        instance_uuid -> Nullable<Uuid>,
        #[max_length = 36]
        request_id -> Nullable<Varchar>,
        numa_node -> Nullable<Int4>,
        #[max_length = 12]
        parent_addr -> Nullable<Varchar>,
        uuid -> Uuid,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    placement_aggregates (id) {
        id -> Int8,
        uuid -> Uuid,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    node_build_failures (node) {
        node -> Uuid,
        failed_builds -> Int4,
        last_failed_at -> Timestamptz,
        last_error -> Nullable<Text>,
    }
}

diesel::table! {
    placement_epochs (shard) {
        shard -> Int4,
        n -> Int8,
    }
}

diesel::table! {
    projects (id) {
        id -> Int8,
        #[max_length = 255]
        external_id -> Varchar,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    resource_classes (id) {
        id -> Int4,
        #[max_length = 255]
        name -> Varchar,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    resource_provider_aggregates (resource_provider_id, aggregate_id) {
        resource_provider_id -> Int8,
        aggregate_id -> Int8,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    resource_provider_traits (resource_provider_id, trait_id) {
        resource_provider_id -> Int8,
        trait_id -> Int4,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    resource_providers (id) {
        id -> Int8,
        uuid -> Uuid,
        #[max_length = 200]
        name -> Varchar,
        generation -> Int8,
        root_provider_id -> Nullable<Int8>,
        parent_provider_id -> Nullable<Int8>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    ringmaster_processes (holder) {
        holder -> Uuid,
        #[max_length = 64]
        version -> Varchar,
        #[max_length = 255]
        hostname -> Varchar,
        pid -> Int4,
        started_at -> Timestamptz,
    }
}

diesel::table! {
    ringmaster_servers (started_at) {
        started_at -> Timestamptz,
        first_seen -> Timestamptz,
    }
}

diesel::table! {
    services (id) {
        id -> Int8,
        uuid -> Uuid,
        #[max_length = 255]
        host -> Varchar,
        #[max_length = 255]
        binary -> Varchar,
        #[max_length = 255]
        topic -> Nullable<Varchar>,
        report_count -> Int8,
        disabled -> Bool,
        #[max_length = 255]
        disabled_reason -> Nullable<Varchar>,
        forced_down -> Bool,
        last_seen_up -> Nullable<Timestamptz>,
        version -> Int4,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
        holder -> Nullable<Uuid>,
        #[max_length = 255]
        serves_group -> Nullable<Varchar>,
        #[max_length = 255]
        serves_shard -> Nullable<Varchar>,
    }
}

diesel::table! {
    shadow_block_device_mapping (id) {
        id -> Int8,
        uuid -> Uuid,
        instance_uuid -> Uuid,
        #[max_length = 255]
        device_name -> Nullable<Varchar>,
        #[max_length = 255]
        source_type -> Nullable<Varchar>,
        #[max_length = 255]
        destination_type -> Nullable<Varchar>,
        #[max_length = 36]
        volume_id -> Nullable<Varchar>,
        volume_size -> Nullable<Int4>,
        boot_index -> Nullable<Int4>,
        delete_on_termination -> Bool,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    shadow_compute_nodes (id) {
        id -> Int8,
        uuid -> Uuid,
        #[max_length = 255]
        host -> Varchar,
        #[max_length = 255]
        hypervisor_hostname -> Varchar,
        #[max_length = 255]
        hypervisor_type -> Varchar,
        hypervisor_version -> Int4,
        owner_epoch -> Int8,
        service_id -> Nullable<Int8>,
        vcpus -> Int4,
        memory_mb -> Int4,
        local_gb -> Int4,
        vcpus_used -> Int4,
        memory_mb_used -> Int4,
        local_gb_used -> Int4,
        running_vms -> Int4,
        cpu_allocation_ratio -> Float8,
        ram_allocation_ratio -> Float8,
        disk_allocation_ratio -> Float8,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    shadow_instance_actions (id) {
        id -> Int8,
        #[max_length = 255]
        action -> Varchar,
        instance_uuid -> Uuid,
        #[max_length = 255]
        request_id -> Nullable<Varchar>,
        #[max_length = 255]
        user_id -> Nullable<Varchar>,
        #[max_length = 255]
        project_id -> Nullable<Varchar>,
        start_time -> Nullable<Timestamptz>,
        finish_time -> Nullable<Timestamptz>,
        #[max_length = 255]
        message -> Nullable<Varchar>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    shadow_instance_actions_events (id) {
        id -> Int8,
        #[max_length = 255]
        event -> Varchar,
        action_id -> Int8,
        start_time -> Nullable<Timestamptz>,
        finish_time -> Nullable<Timestamptz>,
        #[max_length = 255]
        result -> Nullable<Varchar>,
        traceback -> Nullable<Text>,
        #[max_length = 255]
        host -> Nullable<Varchar>,
        details -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    shadow_instance_extra (id) {
        id -> Int8,
        instance_uuid -> Uuid,
        numa_topology -> Nullable<Text>,
        pci_requests -> Nullable<Text>,
        flavor -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
        image -> Nullable<Text>,
    }
}

diesel::table! {
    shadow_instance_faults (id) {
        id -> Int8,
        instance_uuid -> Uuid,
        code -> Int4,
        #[max_length = 255]
        message -> Nullable<Varchar>,
        details -> Nullable<Text>,
        #[max_length = 255]
        host -> Nullable<Varchar>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    shadow_instance_system_metadata (id) {
        id -> Int8,
        instance_uuid -> Uuid,
        #[max_length = 255]
        key -> Varchar,
        #[max_length = 255]
        value -> Nullable<Varchar>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    shadow_instances (id) {
        id -> Int8,
        uuid -> Uuid,
        #[max_length = 255]
        display_name -> Nullable<Varchar>,
        #[max_length = 255]
        project_id -> Varchar,
        #[max_length = 255]
        user_id -> Varchar,
        #[max_length = 255]
        host -> Nullable<Varchar>,
        #[max_length = 255]
        node -> Nullable<Varchar>,
        #[max_length = 255]
        resource_class -> Nullable<Varchar>,
        #[max_length = 255]
        vm_state -> Varchar,
        #[max_length = 255]
        task_state -> Nullable<Varchar>,
        power_state -> Int4,
        memory_mb -> Int4,
        vcpus -> Int4,
        root_gb -> Int4,
        launched_at -> Nullable<Timestamptz>,
        terminated_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
        #[max_length = 255]
        image_ref -> Nullable<Varchar>,
        #[max_length = 255]
        key_name -> Nullable<Varchar>,
        key_data -> Nullable<Text>,
        user_data -> Nullable<Text>,
        #[max_length = 255]
        config_drive -> Nullable<Varchar>,
        #[max_length = 255]
        availability_zone -> Nullable<Varchar>,
    }
}

diesel::table! {
    shadow_pci_devices (id) {
        id -> Int8,
        compute_node_id -> Int8,
        #[max_length = 12]
        address -> Varchar,
        #[max_length = 4]
        vendor_id -> Varchar,
        #[max_length = 4]
        product_id -> Varchar,
        #[max_length = 8]
        dev_type -> Varchar,
        #[max_length = 255]
        dev_id -> Nullable<Varchar>,
        #[max_length = 255]
        label -> Varchar,
        #[max_length = 36]
        status -> Varchar,
        extra_info -> Nullable<Text>,
        instance_uuid -> Nullable<Uuid>,
        #[max_length = 36]
        request_id -> Nullable<Varchar>,
        numa_node -> Nullable<Int4>,
        #[max_length = 12]
        parent_addr -> Nullable<Varchar>,
        uuid -> Uuid,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    shadow_services (id) {
        id -> Int8,
        uuid -> Uuid,
        #[max_length = 255]
        host -> Varchar,
        #[max_length = 255]
        binary -> Varchar,
        #[max_length = 255]
        topic -> Nullable<Varchar>,
        report_count -> Int8,
        disabled -> Bool,
        #[max_length = 255]
        disabled_reason -> Nullable<Varchar>,
        forced_down -> Bool,
        last_seen_up -> Nullable<Timestamptz>,
        version -> Int4,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
        holder -> Nullable<Uuid>,
        #[max_length = 255]
        serves_group -> Nullable<Varchar>,
        #[max_length = 255]
        serves_shard -> Nullable<Varchar>,
    }
}

diesel::table! {
    shadow_task_log (id) {
        id -> Int8,
        #[max_length = 255]
        task_name -> Varchar,
        #[max_length = 255]
        state -> Varchar,
        #[max_length = 255]
        host -> Varchar,
        period_beginning -> Timestamptz,
        period_ending -> Timestamptz,
        #[max_length = 255]
        message -> Varchar,
        task_items -> Int4,
        errors -> Int4,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    spawn_requests (instance_uuid) {
        instance_uuid -> Uuid,
        #[max_length = 255]
        host -> Varchar,
        #[max_length = 255]
        node -> Varchar,
        pci_devices -> Int4,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    task_log (id) {
        id -> Int8,
        #[max_length = 255]
        task_name -> Varchar,
        #[max_length = 255]
        state -> Varchar,
        #[max_length = 255]
        host -> Varchar,
        period_beginning -> Timestamptz,
        period_ending -> Timestamptz,
        #[max_length = 255]
        message -> Varchar,
        task_items -> Int4,
        errors -> Int4,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        deleted -> Int8,
    }
}

diesel::table! {
    tracker_epochs (shard) {
        shard -> Int4,
        n -> Int8,
    }
}

diesel::table! {
    traits (id) {
        id -> Int4,
        #[max_length = 255]
        name -> Varchar,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    users (id) {
        id -> Int8,
        #[max_length = 255]
        external_id -> Varchar,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::joinable!(allocations -> resource_classes (resource_class_id));
diesel::joinable!(allocations -> resource_providers (resource_provider_id));
diesel::joinable!(compute_nodes -> services (service_id));
diesel::joinable!(consumers -> consumer_types (consumer_type_id));
diesel::joinable!(consumers -> projects (project_id));
diesel::joinable!(consumers -> users (user_id));
diesel::joinable!(flavor_extra_specs -> flavors (flavor_id));
diesel::joinable!(flavor_projects -> flavors (flavor_id));
diesel::joinable!(instance_actions_events -> instance_actions (action_id));
diesel::joinable!(inventories -> resource_classes (resource_class_id));
diesel::joinable!(inventories -> resource_providers (resource_provider_id));
diesel::joinable!(pci_devices -> compute_nodes (compute_node_id));
diesel::joinable!(resource_provider_aggregates -> placement_aggregates (aggregate_id));
diesel::joinable!(resource_provider_aggregates -> resource_providers (resource_provider_id));
diesel::joinable!(resource_provider_traits -> resource_providers (resource_provider_id));
diesel::joinable!(resource_provider_traits -> traits (trait_id));

diesel::allow_tables_to_appear_in_same_query!(
    allocations,
    archive_runs,
    block_device_mapping,
    compute_nodes,
    consumer_types,
    consumers,
    flavor_extra_specs,
    flavor_projects,
    flavors,
    instance_actions,
    instance_actions_events,
    instance_extra,
    instance_faults,
    instance_system_metadata,
    instances,
    inventories,
    instance_builds,
    ironic_listings,
    ironic_nodes,
    key_pairs,
    leader_leases,
    move_batches,
    node_build_failures,
    node_moves,
    ownership_epochs,
    pci_devices,
    placement_aggregates,
    placement_epochs,
    projects,
    resource_classes,
    resource_provider_aggregates,
    resource_provider_traits,
    resource_providers,
    ringmaster_processes,
    ringmaster_servers,
    services,
    shadow_block_device_mapping,
    shadow_compute_nodes,
    shadow_instance_actions,
    shadow_instance_actions_events,
    shadow_instance_extra,
    shadow_instance_faults,
    shadow_instance_system_metadata,
    shadow_instances,
    shadow_pci_devices,
    shadow_services,
    shadow_task_log,
    spawn_requests,
    task_log,
    tracker_epochs,
    traits,
    users,
);
