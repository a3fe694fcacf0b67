//! What a listing of nodes or instances shows: filters, and a page.

use uuid::Uuid;

/// Which rows a listing shows: filters, and a page (`limit` after `marker` and `offset`, by
/// uuid). The same for nodes and instances; `state` is a node's provision state or an
/// instance's vm_state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    pub host: Option<String>,
    pub state: Option<String>,
    pub resource_class: Option<String>,
    /// Only rows whose uuid sorts after this one (the last of the previous page).
    pub marker: Option<Uuid>,
    /// Rows whose uuid, name, node or instance starts with it, or whose host or state it is.
    pub search: Option<String>,
    /// How many of the selected to skip.
    pub offset: i64,
    pub limit: Option<i64>,
}
