//! Raw SQL that PostgreSQL plans once per connection.
//!
//! `diesel::sql_query` marks every statement as not cacheable, so PostgreSQL parses and plans
//! it on each call — for the short multi-CTE statements of the hot Placement paths that is
//! about half their cost. `query` takes the same SQL and the same `.bind::<SqlType, _>(value)`
//! calls, but lets diesel's per-connection statement cache keep the prepared statement, keyed
//! by its text and bind types. Each `$n` in the text is sent as its own parameter, so a
//! parameter may appear more than once.

use std::borrow::Cow;
use std::marker::PhantomData;

use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{HasSqlType, Untyped};

trait Param {
    fn push<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()>;
}

struct Typed<ST, U> {
    value: U,
    _type: PhantomData<fn() -> ST>,
}

impl<ST, U> Param for Typed<ST, U>
where
    Pg: HasSqlType<ST>,
    U: ToSql<ST, Pg>,
{
    fn push<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_bind_param::<ST, U>(&self.value)
    }
}

/// A statement with `$1`, `$2`, … placeholders and their values.
pub struct Cached<'a> {
    sql: Cow<'static, str>,
    params: Vec<Box<dyn Param + 'a>>,
}

/// Starts a cacheable statement.
pub fn query(sql: impl Into<Cow<'static, str>>) -> Cached<'static> {
    Cached {
        sql: sql.into(),
        params: Vec::new(),
    }
}

impl<'a> Cached<'a> {
    /// Binds the next parameter, as `SqlQuery::bind` does.
    pub fn bind<ST, U>(self, value: U) -> Cached<'a>
    where
        Pg: HasSqlType<ST>,
        U: ToSql<ST, Pg> + 'a,
        ST: 'a,
    {
        let Cached { sql, mut params } = self;
        params.push(Box::new(Typed::<ST, U> {
            value,
            _type: PhantomData,
        }));
        Cached { sql, params }
    }
}

impl QueryFragment<Pg> for Cached<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let mut rest: &'b str = &self.sql;
        while let Some(at) = rest.find('$') {
            let digits = rest[at + 1..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            if digits == 0 {
                out.push_sql(&rest[..=at]);
                rest = &rest[at + 1..];
                continue;
            }
            out.push_sql(&rest[..at]);
            let index: usize = rest[at + 1..at + 1 + digits].parse().unwrap_or(0);
            let param = index
                .checked_sub(1)
                .and_then(|index| self.params.get(index))
                .ok_or_else(|| {
                    diesel::result::Error::QueryBuilderError(
                        format!(
                            "statement uses ${index} but has {} parameters",
                            self.params.len()
                        )
                        .into(),
                    )
                })?;
            param.push(&mut out)?;
            rest = &rest[at + 1 + digits..];
        }
        out.push_sql(rest);
        Ok(())
    }
}

impl QueryId for Cached<'_> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl Query for Cached<'_> {
    type SqlType = Untyped;
}

impl RunQueryDsl<PgConnection> for Cached<'_> {}
