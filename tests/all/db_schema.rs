//! Schema rules the code relies on: shadow twins match their tables column for column (the
//! archiver's `INSERT INTO shadow_x SELECT *`), and every foreign key column is indexed.

use std::collections::BTreeMap;

use diesel::{QueryableByName, RunQueryDsl, sql_types::Text};

use crate::helpers::TestDb;

use ringmaster::db::audit::ARCHIVABLE_TABLES as ARCHIVABLE;

#[derive(QueryableByName)]
struct Column {
    #[diesel(sql_type = Text)]
    table_name: String,
    #[diesel(sql_type = Text)]
    description: String,
}

/// Maps each public table to its columns in order, as "name type(length)".
fn columns_by_table(db: &TestDb) -> BTreeMap<String, Vec<String>> {
    let rows: Vec<Column> = diesel::sql_query(
        "SELECT table_name::text AS table_name,
                format('%s %s(%s)', column_name, udt_name, character_maximum_length) AS description
           FROM information_schema.columns
          WHERE table_schema = 'public'
          ORDER BY table_name, ordinal_position",
    )
    .load(&mut db.conn())
    .unwrap();
    let mut tables: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in rows {
        tables
            .entry(row.table_name)
            .or_default()
            .push(row.description);
    }
    tables
}

#[test]
fn every_shadow_table_has_its_tables_columns_in_the_same_order() {
    let tables = columns_by_table(&TestDb::new());
    let shadows: Vec<&String> = tables
        .keys()
        .filter(|name| name.starts_with("shadow_"))
        .collect();
    assert_eq!(
        shadows.len(),
        ARCHIVABLE.len(),
        "one shadow per archivable table: {shadows:?}"
    );
    for shadow in shadows {
        let main = shadow.trim_start_matches("shadow_");
        let main_columns = tables
            .get(main)
            .unwrap_or_else(|| panic!("{shadow} has no table {main}"));
        assert_eq!(
            &tables[shadow], main_columns,
            "{shadow} differs from {main}"
        );
    }
}

#[test]
fn every_soft_deleted_table_is_archivable_and_has_a_shadow() {
    let tables = columns_by_table(&TestDb::new());
    let soft_deleted: Vec<&str> = tables
        .iter()
        .filter(|(name, columns)| {
            !name.starts_with("shadow_")
                && columns
                    .iter()
                    .any(|column| column.starts_with("deleted int8"))
        })
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(soft_deleted, ARCHIVABLE);
    for table in ARCHIVABLE {
        assert!(
            tables.contains_key(&format!("shadow_{table}")),
            "{table} has no shadow"
        );
        let columns = &tables[*table];
        for soft_delete_column in ["deleted_at timestamptz()", "deleted int8()"] {
            assert!(
                columns.iter().any(|column| column == soft_delete_column),
                "{table} lacks {soft_delete_column}"
            );
        }
    }
}

#[derive(QueryableByName)]
struct Unindexed {
    #[diesel(sql_type = Text)]
    foreign_key: String,
}

#[test]
fn every_foreign_key_column_is_indexed() {
    let unindexed: Vec<Unindexed> = diesel::sql_query(
        "SELECT format('%s.%s', c.conrelid::regclass, c.conname) AS foreign_key
           FROM pg_constraint c
          WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
            AND NOT EXISTS (
                SELECT 1 FROM pg_index i
                 WHERE i.indrelid = c.conrelid
                   AND (i.indkey::int2[])[0:array_length(c.conkey, 1) - 1] = c.conkey)",
    )
    .load(&mut TestDb::new().conn())
    .unwrap();
    let names: Vec<String> = unindexed.into_iter().map(|row| row.foreign_key).collect();
    assert!(
        names.is_empty(),
        "foreign keys without a leading index: {names:?}"
    );
}

#[test]
fn a_migrated_database_has_placements_standard_names() {
    use diesel::RunQueryDsl;
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        line: String,
    }
    let db = TestDb::new();
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT format('%s classes, %s traits, VCPU=%s, PCPU=%s',
                (SELECT count(*) FROM resource_classes), (SELECT count(*) FROM traits),
                (SELECT id FROM resource_classes WHERE name = 'VCPU'),
                (SELECT id FROM resource_classes WHERE name = 'PCPU')) AS line",
    )
    .load(&mut db.conn())
    .unwrap();
    assert_eq!(rows[0].line, "21 classes, 377 traits, VCPU=0, PCPU=14");
}
