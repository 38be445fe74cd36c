//! The static types of AGX ([`Ty`]): vocabulary the type checker (`types`) and the
//! function table's signatures (`functions`) both speak, below both.

use serde_json::Value;

/// A static type. `Integer` is a subtype of `Number`; `Any` means unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// Unknown: could be anything.
    Any,
    /// `null`
    Null,
    /// `true` or `false`
    Bool,
    /// Any number (integer or float).
    Number,
    /// An integer number.
    Integer,
    /// A string.
    String,
    /// An array.
    Array,
    /// An object.
    Object,
}

impl Ty {
    /// The AGX name of the type, as used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Ty::Any => "any",
            Ty::Null => "null",
            Ty::Bool => "boolean",
            Ty::Number => "number",
            Ty::Integer => "integer",
            Ty::String => "string",
            Ty::Array => "array",
            Ty::Object => "object",
        }
    }

    /// The most precise type of a value.
    pub fn of_value(value: &Value) -> Ty {
        match value {
            Value::Null => Ty::Null,
            Value::Bool(_) => Ty::Bool,
            Value::Number(n) if n.is_i64() => Ty::Integer,
            Value::Number(_) => Ty::Number,
            Value::String(_) => Ty::String,
            Value::Array(_) => Ty::Array,
            Value::Object(_) => Ty::Object,
        }
    }

    pub(crate) fn is_numeric(self) -> bool {
        matches!(self, Ty::Number | Ty::Integer)
    }

    /// Could a value of this type be a number?
    pub(crate) fn may_be_number(self) -> bool {
        matches!(self, Ty::Any | Ty::Number | Ty::Integer)
    }

    pub(crate) fn may_be(self, other: Ty) -> bool {
        self == Ty::Any || self == other
    }
}
