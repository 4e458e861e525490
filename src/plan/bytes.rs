//! Bytes in a JSON record as base64 (`#[serde(with = "crate::plan::bytes")]`), as the API
//! writes a Secret's data: a detached sweep's request (`plan/supervisor.rs`) carries the
//! script and `--dir`'s archive, which as JSON numbers would take four times the room.

use k8s_openapi::ByteString;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    ByteString(bytes.to_vec()).serialize(s)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    Ok(ByteString::deserialize(d)?.0)
}

/// The same for an `Option`.
pub mod optional {
    use super::*;

    pub fn serialize<S: Serializer>(bytes: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        bytes.clone().map(ByteString).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        Ok(Option::<ByteString>::deserialize(d)?.map(|b| b.0))
    }
}
