//! Values a key can hold. Each data type lives in its own module and is exposed here
//! as one variant; this module knows only how to name and size them.

use crate::bytes::CompactBytes;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Str(CompactBytes),
}

/// The type names TYPE and SCAN ... TYPE use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    String,
}

impl ValueType {
    pub fn name(self) -> &'static str {
        match self {
            ValueType::String => "string",
        }
    }

    pub fn from_name(name: &[u8]) -> Option<ValueType> {
        if name.eq_ignore_ascii_case(b"string") {
            Some(ValueType::String)
        } else {
            None
        }
    }
}

impl Value {
    pub fn str(data: &[u8]) -> Value {
        Value::Str(CompactBytes::new(data))
    }

    /// The string inside, or `None` when the key holds another type.
    pub fn as_str(&self) -> Option<&CompactBytes> {
        match self {
            Value::Str(s) => Some(s),
        }
    }

    pub fn as_str_mut(&mut self) -> Option<&mut CompactBytes> {
        match self {
            Value::Str(s) => Some(s),
        }
    }

    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Str(_) => ValueType::String,
        }
    }

    /// The name OBJECT ENCODING reports, matching Redis's choice for the same value.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => {
                let b = s.as_slice();
                // A string changed in place (APPEND, SETRANGE, SETBIT) is raw in
                // Redis whatever it holds.
                if matches!(s, CompactBytes::Growable(_)) {
                    "raw"
                } else if b.len() <= 20 && crate::num::parse_i64(b).is_some() {
                    "int"
                } else if b.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
        }
    }

    /// Whether Redis would hold this value as one of its shared integer objects
    /// (0 to 9999), which OBJECT REFCOUNT reports as referenced "forever".
    pub fn is_shared_integer(&self) -> bool {
        self.encoding() == "int"
            && self
                .as_str()
                .and_then(|s| crate::num::parse_i64(s.as_slice()))
                .is_some_and(|n| (0..10_000).contains(&n))
    }

    /// Heap bytes owned by the value beyond its inline part.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_bytes(),
        }
    }
}
