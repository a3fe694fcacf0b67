//! Every migration applies, reverts to exactly the schema before it, and re-applies.

use diesel::migration::MigrationSource;
use diesel::pg::Pg;
use diesel::{PgConnection, QueryableByName, RunQueryDsl, sql_types::Text};
use diesel_migrations::MigrationHarness;
use ringmaster::db::MIGRATIONS;

use crate::helpers::TestDb;

#[derive(QueryableByName)]
struct Line {
    #[diesel(sql_type = Text)]
    line: String,
}

/// Describes the public schema (columns, constraints, indexes, sequences, triggers and their
/// functions), one sorted line
/// per item, leaving out diesel's own bookkeeping table. A column's position is its rank among
/// the table's live columns (a column dropped and added again keeps its place in the order,
/// though PostgreSQL numbers it past the dropped one).
pub fn schema_snapshot(conn: &mut PgConnection) -> Vec<String> {
    let query = r#"
        SELECT format('column %s.%s #%s %s %s default=%s identity=%s', table_name, column_name,
                      row_number() OVER (PARTITION BY table_name ORDER BY ordinal_position),
                      data_type, is_nullable, column_default, is_identity) AS line
          FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name <> '__diesel_schema_migrations'
        UNION ALL
        SELECT format('constraint %s %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid))
          FROM pg_constraint
         WHERE connamespace = 'public'::regnamespace
           AND conrelid::regclass::text <> '__diesel_schema_migrations'
        UNION ALL
        SELECT format('index %s', indexdef)
          FROM pg_indexes
         WHERE schemaname = 'public' AND tablename <> '__diesel_schema_migrations'
        UNION ALL
        SELECT format('sequence %s', sequence_name)
          FROM information_schema.sequences
         WHERE sequence_schema = 'public'
        UNION ALL
        SELECT format('trigger %s %s', tgrelid::regclass, pg_get_triggerdef(oid))
          FROM pg_trigger
         WHERE NOT tgisinternal AND tgrelid::regclass::text <> '__diesel_schema_migrations'
        UNION ALL
        SELECT format('function %s %s', p.proname, md5(p.prosrc))
          FROM pg_proc p
         WHERE p.pronamespace = 'public'::regnamespace
        ORDER BY line"#;
    diesel::sql_query(query)
        .load::<Line>(conn)
        .unwrap()
        .into_iter()
        .map(|row| row.line)
        .collect()
}

#[test]
fn every_migration_applies_reverts_and_reapplies() {
    let db = TestDb::empty();
    let mut conn = db.conn();
    let migrations = MigrationSource::<Pg>::migrations(&MIGRATIONS).unwrap();
    assert!(
        migrations.len() >= 8,
        "the schema comes in several migrations"
    );

    let mut before = schema_snapshot(&mut conn);
    assert!(
        before.is_empty(),
        "an empty database has no schema: {before:#?}"
    );
    for migration in &migrations {
        let name = migration.name().to_string();
        conn.run_next_migration(MIGRATIONS).unwrap();
        let after = schema_snapshot(&mut conn);
        assert_ne!(after, before, "{name} changes nothing");

        conn.revert_last_migration(MIGRATIONS).unwrap();
        assert_eq!(
            schema_snapshot(&mut conn),
            before,
            "down.sql of {name} does not undo its up.sql"
        );

        conn.run_next_migration(MIGRATIONS).unwrap();
        assert_eq!(
            schema_snapshot(&mut conn),
            after,
            "{name} does not re-apply to the same schema"
        );
        before = after;
    }

    conn.revert_all_migrations(MIGRATIONS).unwrap();
    assert!(
        schema_snapshot(&mut conn).is_empty(),
        "reverting everything leaves no schema behind"
    );
}

#[test]
fn the_template_schema_is_the_fully_migrated_schema() {
    let migrated = TestDb::new();
    let by_hand = TestDb::empty();
    let mut by_hand_conn = by_hand.conn();
    by_hand_conn.run_pending_migrations(MIGRATIONS).unwrap();
    assert_eq!(
        schema_snapshot(&mut migrated.conn()),
        schema_snapshot(&mut by_hand_conn)
    );
    assert!(!migrated.conn().has_pending_migration(MIGRATIONS).unwrap());
}
