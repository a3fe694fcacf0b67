//! Pure types and rules of ringmaster: no IO, no diesel, no actix, no logging.

/// A choice among named values, for flags and the API: `name`, `Display` and `FromStr` (an
/// unknown name is refused naming `$what` and the names allowed) from one list.
macro_rules! named_choices {
    ($type:ident, $what:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $type {
            /// The name flags, files and the API use.
            pub fn name(self) -> &'static str {
                match self {
                    $($type::$variant => $name),+
                }
            }
        }

        impl std::fmt::Display for $type {
            fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str(self.name())
            }
        }

        impl std::str::FromStr for $type {
            type Err = String;

            fn from_str(text: &str) -> Result<Self, String> {
                match text {
                    $($name => Ok($type::$variant),)+
                    other => Err(format!(
                        concat!("unknown ", $what, " {:?}: expected ", named_choices!(@list $($name),+)),
                        other
                    )),
                }
            }
        }
    };
    (@list $first:literal $(, $rest:literal)*) => {
        concat!($first $(, " or ", $rest)*)
    };
}

pub mod archive;
pub mod boot;
pub mod candidates;
pub mod clock;
pub mod compute;
pub mod dateutil;
pub mod error;
pub mod failover;
pub mod host;
pub mod identity;
pub mod instance;
pub mod listing;
pub mod mirror;
pub mod node;
pub mod placement;
pub mod placement_filter;
pub mod rebalance;
pub mod ring;
pub mod selection;
pub mod text;
pub mod timeline;
pub mod tracker;
