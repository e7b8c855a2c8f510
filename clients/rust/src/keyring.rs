//! keyring.json and token-ttl, parsed by the rules of the Go library's `keyring.Parse` and
//! `ParseTokenTTL` (docs/consumers.md), with Go's messages for every rule but JSON syntax.

use std::cell::RefCell;
use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use sha2::{Digest, Sha256};

/// The most keys a keyring holds.
pub const MAX_KEYS: usize = 8;
/// The fewest bytes of a secret.
pub const MIN_SECRET_BYTES: usize = 32;
/// The longest key id.
pub const MAX_ID_LENGTH: usize = 32;
/// The largest keyring.json read.
pub const MAX_DOCUMENT_BYTES: usize = 1 << 20;
/// The longest token lifetime a token-ttl file declares, in seconds (15 minutes).
pub const MAX_TOKEN_TTL_SECONDS: u64 = 900;
/// The name of the keyring file in the mounted directory.
pub const SECRET_DATA_KEY: &str = "keyring.json";
/// The name of the optional token-ttl file beside it.
pub const TOKEN_TTL_DATA_KEY: &str = "token-ttl";

const FINGERPRINT_TAG: &[u8] = b"mrtr-keyring-fingerprint-v1\x00";

/// A keyring.json or token-ttl that is not valid. The message names the entry (keys\[i\], and its
/// id once that was read) and never holds key bytes or any part of a secret string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyringError {
    message: String,
    index: Option<usize>,
}

impl KeyringError {
    fn new(message: impl Into<String>, index: Option<usize>) -> Self {
        Self {
            message: message.into(),
            index,
        }
    }

    /// The position of the bad entry, or None when the problem is not in one entry.
    pub fn index(&self) -> Option<usize> {
        self.index
    }
}

impl fmt::Display for KeyringError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for KeyringError {}

/// One entry of a keyring: a public id and the secret bytes. Debug shows the length only.
#[derive(Clone, PartialEq, Eq)]
pub struct Key {
    id: String,
    secret: Vec<u8>,
}

impl Key {
    /// The key's id: the rs2 tokens' kid.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The key's bytes.
    pub fn secret(&self) -> &[u8] {
        &self.secret
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Key {{ id: {:?}, secret: <redacted {} bytes> }}",
            self.id,
            self.secret.len()
        )
    }
}

/// An ordered, validated keyring: keys\[0\] seals, every key opens. `fingerprint` is Go's
/// `Keyring.Fingerprint()`, what a pod acknowledges; `token_ttl` the declared token lifetime in
/// seconds, None without a token-ttl file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keyring {
    keys: Vec<Key>,
    fingerprint: String,
    token_ttl: Option<u64>,
}

impl Keyring {
    /// The keys, in order.
    pub fn keys(&self) -> &[Key] {
        &self.keys
    }

    /// The key that seals.
    pub fn primary(&self) -> &Key {
        &self.keys[0]
    }

    /// Go's fingerprint of the keys.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The declared token lifetime in seconds, if any.
    pub fn token_ttl(&self) -> Option<u64> {
        self.token_ttl
    }

    /// The same keyring, declaring a token lifetime of `seconds`.
    pub fn with_token_ttl(mut self, seconds: Option<u64>) -> Self {
        self.token_ttl = seconds;
        self
    }
}

/// Go's fingerprint: SHA-256 of a domain tag, then each key as length-prefixed id and secret
/// (4-byte big-endian lengths), cut to 16 hex digits.
pub fn fingerprint(keys: &[Key]) -> String {
    let mut h = Sha256::new();
    h.update(FINGERPRINT_TAG);
    for k in keys {
        h.update((k.id.len() as u32).to_be_bytes());
        h.update(k.id.as_bytes());
        h.update((k.secret.len() as u32).to_be_bytes());
        h.update(&k.secret);
    }
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Go's `ParseTokenTTL`: whole seconds from 1 to 900 in ASCII decimal, no sign or leading zeros,
/// one trailing newline allowed.
pub fn parse_token_ttl(data: &[u8]) -> Result<u64, KeyringError> {
    let text = data.strip_suffix(b"\n").unwrap_or(data);
    let ok = !text.is_empty()
        && text.len() <= 3
        && text[0] != b'0'
        && text.iter().all(u8::is_ascii_digit);
    let secs = if ok {
        std::str::from_utf8(text)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
    } else {
        None
    };
    match secs {
        Some(s) if s <= MAX_TOKEN_TTL_SECONDS => Ok(s),
        _ => Err(KeyringError::new(
            format!(
                "{TOKEN_TTL_DATA_KEY} is {}: want whole seconds from 1 to {MAX_TOKEN_TTL_SECONDS}",
                go_quote_limit(data, 20)
            ),
            None,
        )),
    }
}

/// Parses keyring.json as the Go library's `keyring.Parse` does: the whole file is refused for any
/// broken rule.
pub fn parse(data: &[u8]) -> Result<Keyring, KeyringError> {
    let fail =
        |m: String, i: Option<usize>| KeyringError::new(format!("{SECRET_DATA_KEY}: {m}"), i);
    if data.len() > MAX_DOCUMENT_BYTES {
        return Err(fail(
            format!(
                "document is {} bytes: at most {MAX_DOCUMENT_BYTES} are allowed",
                data.len()
            ),
            None,
        ));
    }
    if data.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(fail(
            "document is empty: want {\"keys\":[...]}".into(),
            None,
        ));
    }
    let ctx = Ctx::default();
    // Go's decoder reads invalid UTF-8 in a string as U+FFFD; serde_json refuses it. Replacing it
    // first gives Go's answers (an id with such a byte is refused by the id rule, at its offset).
    let text = String::from_utf8_lossy(data);
    let mut de = serde_json::Deserializer::from_str(&text);
    let result = DocSeed { ctx: &ctx }.deserialize(&mut de);
    let stashed = ctx.error.borrow_mut().take();
    let keys = match (result, stashed) {
        (_, Some((m, i))) => return Err(fail(m, i)),
        (Err(e), None) if e.to_string().starts_with("number out of range") => {
            match ctx.if_number.borrow_mut().take() {
                Some((m, i)) => return Err(fail(m, i)),
                None => return Err(fail(format!("invalid JSON ({e})"), ctx.entry.get())),
            }
        }
        (Err(e), None) => {
            let at = ctx.entry.get();
            let m = match at {
                Some(i) => format!("invalid JSON ({e}) in keys[{i}]"),
                None => format!("invalid JSON ({e})"),
            };
            return Err(fail(m, at));
        }
        (Ok(keys), None) => keys,
    };
    if de.end().is_err() {
        return Err(fail(
            "unexpected data after the keyring object".into(),
            None,
        ));
    }
    let fingerprint = fingerprint(&keys);
    Ok(Keyring {
        keys,
        fingerprint,
        token_ttl: None,
    })
}

/// What the visitors share: the rule broken (Go's message, the entry), and the entry being read.
#[derive(Default)]
struct Ctx {
    error: RefCell<Option<(String, Option<usize>)>>,
    entry: std::cell::Cell<Option<usize>>,
    /// The message for a number out of f64's range in the value being read: serde_json refuses
    /// such a number as a syntax error, where Go reads a number, of the wrong kind.
    if_number: RefCell<Option<(String, Option<usize>)>>,
}

impl Ctx {
    fn fail<E: serde::de::Error>(&self, m: String, i: Option<usize>) -> E {
        *self.error.borrow_mut() = Some((m, i));
        E::custom("keyring rule")
    }
}

/// Go's kind of a JSON value, for errors.
fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

/// A field name as Go shows it: quoted, and cut when long.
fn show_name(name: &str) -> String {
    if name.chars().count() > 40 {
        let cut: String = name.chars().take(40).collect();
        format!("{}...", go_quote(cut.as_bytes()))
    } else {
        go_quote(name.as_bytes())
    }
}

/// Go's `%.<limit>q` of bytes: the first `limit` runes, quoted with Go's escapes (printable
/// runes as they are, invalid UTF-8 as \x bytes).
fn go_quote_limit(b: &[u8], limit: usize) -> String {
    let mut s = String::from("\"");
    let (mut rest, mut runes) = (b, 0);
    while !rest.is_empty() && runes < limit {
        runes += 1;
        let valid = match std::str::from_utf8(rest) {
            Ok(v) => v,
            Err(e) => std::str::from_utf8(&rest[..e.valid_up_to()]).unwrap_or(""),
        };
        let Some(c) = valid.chars().next() else {
            s.push_str(&format!("\\x{:02x}", rest[0]));
            rest = &rest[1..];
            continue;
        };
        rest = &rest[c.len_utf8()..];
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\u{7}' => s.push_str("\\a"),
            '\u{8}' => s.push_str("\\b"),
            '\u{c}' => s.push_str("\\f"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            '\u{b}' => s.push_str("\\v"),
            c if !c.is_control() && !c.is_whitespace() || c == ' ' => s.push(c),
            c if (c as u32) < 0x80 => s.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => s.push_str(&format!("\\u{:04x}", c as u32)),
            c => s.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    s.push('"');
    s
}

fn go_quote(b: &[u8]) -> String {
    go_quote_limit(b, usize::MAX)
}

/// A value read whole to name its kind (only for values that are refused or are strings).
fn value_kind<'de, A: MapAccess<'de>>(map: &mut A) -> Result<serde_json::Value, A::Error> {
    map.next_value::<serde_json::Value>()
}

struct DocSeed<'a> {
    ctx: &'a Ctx,
}

impl<'de> DeserializeSeed<'de> for DocSeed<'_> {
    type Value = Vec<Key>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Key>, D::Error> {
        d.deserialize_any(self)
    }
}

macro_rules! not_an_object {
    ($($method:ident: $t:ty => $kind:expr),* $(,)?) => {
        $(fn $method<E: serde::de::Error>(self, _v: $t) -> Result<Self::Value, E> {
            Err(self.wrong($kind))
        })*
    };
}

impl DocSeed<'_> {
    fn wrong<E: serde::de::Error>(&self, kind: &str) -> E {
        self.ctx.fail(
            format!("document is {kind}: want an object {{\"keys\":[...]}}"),
            None,
        )
    }
}

impl<'de> Visitor<'de> for DocSeed<'_> {
    type Value = Vec<Key>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a keyring object")
    }
    not_an_object! {
        visit_bool: bool => "a boolean",
        visit_i64: i64 => "a number",
        visit_u64: u64 => "a number",
        visit_f64: f64 => "a number",
        visit_str: &str => "a string",
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Err(self.wrong("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        Err(self.wrong("a list"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let ctx = self.ctx;
        let mut keys = None;
        while let Some(name) = map.next_key::<String>()? {
            if name != "keys" {
                return Err(ctx.fail(
                    format!(
                        "unknown field {} at top level: only \"keys\" is allowed",
                        show_name(&name)
                    ),
                    None,
                ));
            }
            if keys.is_some() {
                return Err(ctx.fail("duplicate field \"keys\" at top level".into(), None));
            }
            *ctx.if_number.borrow_mut() = Some((
                format!("\"keys\" is a number: want a list of 1 to {MAX_KEYS} keys"),
                None,
            ));
            keys = Some(map.next_value_seed(KeysSeed { ctx })?);
        }
        keys.ok_or_else(|| ctx.fail("missing field \"keys\"".into(), None))
    }
}

struct KeysSeed<'a> {
    ctx: &'a Ctx,
}

impl<'de> DeserializeSeed<'de> for KeysSeed<'_> {
    type Value = Vec<Key>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Key>, D::Error> {
        d.deserialize_any(self)
    }
}

impl KeysSeed<'_> {
    fn wrong<E: serde::de::Error>(&self, kind: &str) -> E {
        self.ctx.fail(
            format!("\"keys\" is {kind}: want a list of 1 to {MAX_KEYS} keys"),
            None,
        )
    }
}

impl<'de> Visitor<'de> for KeysSeed<'_> {
    type Value = Vec<Key>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of keys")
    }
    not_an_object! {
        visit_bool: bool => "a boolean",
        visit_i64: i64 => "a number",
        visit_u64: u64 => "a number",
        visit_f64: f64 => "a number",
        visit_str: &str => "a string",
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Err(self.wrong("null"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Err(self.wrong("an object"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let ctx = self.ctx;
        let mut keys: Vec<Key> = Vec::new();
        loop {
            let i = keys.len();
            ctx.entry.set(Some(i));
            if i == MAX_KEYS {
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    return Err(
                        ctx.fail(format!("\"keys\" has more than {MAX_KEYS} entries"), None)
                    );
                }
                break;
            }
            *ctx.if_number.borrow_mut() = Some((
                format!("keys[{i}] is a number: want an object {{\"id\":...,\"secret\":...}}"),
                Some(i),
            ));
            let Some(key) = seq.next_element_seed(EntrySeed { ctx, index: i })? else {
                break;
            };
            if let Some(j) = keys.iter().position(|k| k.id == key.id) {
                return Err(ctx.fail(
                    format!("keys[{i}] (id {:?}): id already used by keys[{j}]", key.id),
                    Some(i),
                ));
            }
            keys.push(key);
        }
        ctx.entry.set(None);
        if keys.is_empty() {
            return Err(ctx.fail(
                format!("\"keys\" is empty: a keyring needs 1 to {MAX_KEYS} keys"),
                None,
            ));
        }
        Ok(keys)
    }
}

struct EntrySeed<'a> {
    ctx: &'a Ctx,
    index: usize,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_> {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_any(self)
    }
}

impl EntrySeed<'_> {
    fn wrong<E: serde::de::Error>(&self, kind: &str) -> E {
        self.ctx.fail(
            format!(
                "keys[{}] is {kind}: want an object {{\"id\":...,\"secret\":...}}",
                self.index
            ),
            Some(self.index),
        )
    }
}

/// Go's check of a key id: 1 to 32 bytes of A-Za-z0-9_-.
fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err(format!(
            "id is empty: ids are 1 to {MAX_ID_LENGTH} characters of A-Za-z0-9_-"
        ));
    }
    if id.len() > MAX_ID_LENGTH {
        return Err(format!(
            "id is {} bytes long: at most {MAX_ID_LENGTH} characters of A-Za-z0-9_- are allowed",
            id.len()
        ));
    }
    if let Some(at) = id
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
    {
        return Err(format!("id has a byte outside A-Za-z0-9_- at offset {at}"));
    }
    Ok(())
}

impl<'de> Visitor<'de> for EntrySeed<'_> {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key object")
    }
    not_an_object! {
        visit_bool: bool => "a boolean",
        visit_i64: i64 => "a number",
        visit_u64: u64 => "a number",
        visit_f64: f64 => "a number",
        visit_str: &str => "a string",
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Err(self.wrong("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        Err(self.wrong("a list"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (ctx, i) = (self.ctx, self.index);
        let mut id: Option<String> = None;
        let mut secret: Option<String> = None;
        // keys[i], and its id once a valid one was read: Go's way of naming the entry.
        let at = |id: &Option<String>| match id {
            Some(id) if check_id(id).is_ok() => format!("keys[{i}] (id {id:?})"),
            _ => format!("keys[{i}]"),
        };
        while let Some(name) = map.next_key::<String>()? {
            match name.as_str() {
                "id" | "secret" => {
                    let slot = if name == "id" { &mut id } else { &mut secret };
                    if slot.is_some() {
                        let m = format!("{}: duplicate field {name:?}", at(&id));
                        return Err(ctx.fail(m, Some(i)));
                    }
                    *ctx.if_number.borrow_mut() = Some((
                        format!("{}: {name:?} is a number: want a string", at(&id)),
                        Some(i),
                    ));
                    match value_kind(&mut map)? {
                        serde_json::Value::String(s) => {
                            let is_id = name == "id";
                            *(if is_id { &mut id } else { &mut secret }) = Some(s);
                            if is_id && let Err(m) = check_id(id.as_deref().unwrap_or("")) {
                                return Err(ctx.fail(format!("keys[{i}]: {m}"), Some(i)));
                            }
                        }
                        v => {
                            let m = format!("{}: {name:?} is {}: want a string", at(&id), kind(&v));
                            return Err(ctx.fail(m, Some(i)));
                        }
                    }
                }
                _ => {
                    let m = format!(
                        "{}: unknown field {}: only \"id\" and \"secret\" are allowed",
                        at(&id),
                        show_name(&name)
                    );
                    return Err(ctx.fail(m, Some(i)));
                }
            }
        }
        let Some(id) = id else {
            return Err(ctx.fail(format!("keys[{i}]: missing field \"id\""), Some(i)));
        };
        let Some(secret) = secret else {
            let m = format!("keys[{i}] (id {id:?}): missing field \"secret\"");
            return Err(ctx.fail(m, Some(i)));
        };
        let bytes = decode_std_b64(&secret).ok_or_else(|| {
            ctx.fail(
                format!(
                    "keys[{i}] (id {id:?}): secret is not standard base64 (RFC 4648 alphabet, with padding, no line breaks)"
                ),
                Some(i),
            )
        })?;
        if bytes.len() < MIN_SECRET_BYTES {
            let m = format!(
                "keys[{i}] (id {id:?}): secret is {} bytes: at least {MIN_SECRET_BYTES} are required",
                bytes.len()
            );
            return Err(ctx.fail(m, Some(i)));
        }
        Ok(Key { id, secret: bytes })
    }
}

/// Canonical standard base64: the RFC 4648 alphabet, padded, nothing else, zero padding bits (the
/// base64 crate's STANDARD engine refuses non-zero trailing bits).
fn decode_std_b64(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(4)
        || !s
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=')
    {
        return None;
    }
    let b = STANDARD.decode(s).ok()?;
    (STANDARD.encode(&b) == s).then_some(b)
}
