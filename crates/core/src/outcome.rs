//! What happened to a request, counted by class and never by message string.
use serde::{Deserialize, Serialize};

/// Why a request failed. Each class is counted separately in results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// No response within `--timeout`. Its response time is a lower bound (censored).
    Timeout,
    /// The connection could not be opened (refused, unreachable).
    Connect,
    /// The connection broke mid-exchange: reset, or closed before the response was complete.
    Io,
    /// The server answered something that is not valid HTTP/1.1, or broke the HTTP/2 protocol
    /// (a PROTOCOL_ERROR or FLOW_CONTROL_ERROR on the connection or the stream).
    Protocol,
    /// A 4xx status.
    #[serde(rename = "http_4xx")]
    Http4xx,
    /// A 5xx status.
    #[serde(rename = "http_5xx")]
    Http5xx,
    /// A 1xx or 3xx final status.
    #[serde(rename = "http_other")]
    HttpOther,
    /// An in-process call (sojourn as a library) returned an error.
    Error,
    /// The TCP connection opened but the TLS handshake failed: the certificate was rejected
    /// (expired, wrong name, unknown issuer) or client and server share no protocol version.
    /// Kept apart from `connect` because the fix is on the certificate, not the network.
    Tls,
    /// HTTP/2: the server reset the request's stream (RST_STREAM) before its answer was
    /// complete, e.g. REFUSED_STREAM under load or CANCEL. The connection carries on.
    Reset,
    /// HTTP/2: the server sent GOAWAY and did not process the request (its stream is past the
    /// last one the server said it would handle), and a retry on a fresh connection failed too.
    #[serde(rename = "goaway")]
    GoAway,
    /// A journey's step was answered, but not as its `expect` says (a status outside its set,
    /// a body without the string it must contain).
    Check,
    /// A journey's step was answered, but a variable it must extract was not there (a JSON
    /// pointer, regex group, header or cookie with no match).
    Extract,
    // gRPC: the call was answered with a status other than OK, one class per status code of
    // the gRPC spec, in code order (1 to 16), named `grpc:NAME`.
    /// gRPC status 1 (CANCELLED).
    #[serde(rename = "grpc:CANCELLED")]
    GrpcCancelled,
    /// gRPC status 2 (UNKNOWN).
    #[serde(rename = "grpc:UNKNOWN")]
    GrpcUnknown,
    /// gRPC status 3 (INVALID_ARGUMENT).
    #[serde(rename = "grpc:INVALID_ARGUMENT")]
    GrpcInvalidArgument,
    /// gRPC status 4 (DEADLINE_EXCEEDED).
    #[serde(rename = "grpc:DEADLINE_EXCEEDED")]
    GrpcDeadlineExceeded,
    /// gRPC status 5 (NOT_FOUND).
    #[serde(rename = "grpc:NOT_FOUND")]
    GrpcNotFound,
    /// gRPC status 6 (ALREADY_EXISTS).
    #[serde(rename = "grpc:ALREADY_EXISTS")]
    GrpcAlreadyExists,
    /// gRPC status 7 (PERMISSION_DENIED).
    #[serde(rename = "grpc:PERMISSION_DENIED")]
    GrpcPermissionDenied,
    /// gRPC status 8 (RESOURCE_EXHAUSTED).
    #[serde(rename = "grpc:RESOURCE_EXHAUSTED")]
    GrpcResourceExhausted,
    /// gRPC status 9 (FAILED_PRECONDITION).
    #[serde(rename = "grpc:FAILED_PRECONDITION")]
    GrpcFailedPrecondition,
    /// gRPC status 10 (ABORTED).
    #[serde(rename = "grpc:ABORTED")]
    GrpcAborted,
    /// gRPC status 11 (OUT_OF_RANGE).
    #[serde(rename = "grpc:OUT_OF_RANGE")]
    GrpcOutOfRange,
    /// gRPC status 12 (UNIMPLEMENTED).
    #[serde(rename = "grpc:UNIMPLEMENTED")]
    GrpcUnimplemented,
    /// gRPC status 13 (INTERNAL).
    #[serde(rename = "grpc:INTERNAL")]
    GrpcInternal,
    /// gRPC status 14 (UNAVAILABLE).
    #[serde(rename = "grpc:UNAVAILABLE")]
    GrpcUnavailable,
    /// gRPC status 15 (DATA_LOSS).
    #[serde(rename = "grpc:DATA_LOSS")]
    GrpcDataLoss,
    /// gRPC status 16 (UNAUTHENTICATED).
    #[serde(rename = "grpc:UNAUTHENTICATED")]
    GrpcUnauthenticated,
}

impl FailureClass {
    pub const ALL: [FailureClass; 29] = [
        FailureClass::Timeout,
        FailureClass::Connect,
        FailureClass::Io,
        FailureClass::Protocol,
        FailureClass::Http4xx,
        FailureClass::Http5xx,
        FailureClass::HttpOther,
        FailureClass::Error,
        FailureClass::Tls,
        FailureClass::Reset,
        FailureClass::GoAway,
        FailureClass::Check,
        FailureClass::Extract,
        FailureClass::GrpcCancelled,
        FailureClass::GrpcUnknown,
        FailureClass::GrpcInvalidArgument,
        FailureClass::GrpcDeadlineExceeded,
        FailureClass::GrpcNotFound,
        FailureClass::GrpcAlreadyExists,
        FailureClass::GrpcPermissionDenied,
        FailureClass::GrpcResourceExhausted,
        FailureClass::GrpcFailedPrecondition,
        FailureClass::GrpcAborted,
        FailureClass::GrpcOutOfRange,
        FailureClass::GrpcUnimplemented,
        FailureClass::GrpcInternal,
        FailureClass::GrpcUnavailable,
        FailureClass::GrpcDataLoss,
        FailureClass::GrpcUnauthenticated,
    ];

    /// The first gRPC class, status 1 (CANCELLED): the gRPC classes follow in code order.
    const GRPC_FIRST: usize = FailureClass::GrpcCancelled as usize;

    /// The class of a non-2xx HTTP status, or `None` for success.
    pub fn of_status(status: u16) -> Option<FailureClass> {
        match status {
            200..=299 => None,
            400..=499 => Some(FailureClass::Http4xx),
            500..=599 => Some(FailureClass::Http5xx),
            _ => Some(FailureClass::HttpOther),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FailureClass::Timeout => "timeout",
            FailureClass::Connect => "connect",
            FailureClass::Io => "io",
            FailureClass::Protocol => "protocol",
            FailureClass::Http4xx => "http_4xx",
            FailureClass::Http5xx => "http_5xx",
            FailureClass::HttpOther => "http_other",
            FailureClass::Error => "error",
            FailureClass::Tls => "tls",
            FailureClass::Reset => "reset",
            FailureClass::GoAway => "goaway",
            FailureClass::Check => "check",
            FailureClass::Extract => "extract",
            FailureClass::GrpcCancelled => "grpc:CANCELLED",
            FailureClass::GrpcUnknown => "grpc:UNKNOWN",
            FailureClass::GrpcInvalidArgument => "grpc:INVALID_ARGUMENT",
            FailureClass::GrpcDeadlineExceeded => "grpc:DEADLINE_EXCEEDED",
            FailureClass::GrpcNotFound => "grpc:NOT_FOUND",
            FailureClass::GrpcAlreadyExists => "grpc:ALREADY_EXISTS",
            FailureClass::GrpcPermissionDenied => "grpc:PERMISSION_DENIED",
            FailureClass::GrpcResourceExhausted => "grpc:RESOURCE_EXHAUSTED",
            FailureClass::GrpcFailedPrecondition => "grpc:FAILED_PRECONDITION",
            FailureClass::GrpcAborted => "grpc:ABORTED",
            FailureClass::GrpcOutOfRange => "grpc:OUT_OF_RANGE",
            FailureClass::GrpcUnimplemented => "grpc:UNIMPLEMENTED",
            FailureClass::GrpcInternal => "grpc:INTERNAL",
            FailureClass::GrpcUnavailable => "grpc:UNAVAILABLE",
            FailureClass::GrpcDataLoss => "grpc:DATA_LOSS",
            FailureClass::GrpcUnauthenticated => "grpc:UNAUTHENTICATED",
        }
    }

    /// Only a journey's step fails this way (`check`, `extract`).
    pub fn journeys_only(self) -> bool {
        matches!(self, FailureClass::Check | FailureClass::Extract)
    }

    /// The class of a gRPC status code, or `None` for OK (0) and for codes outside the spec's
    /// 0..=16 (which the caller must treat as a protocol error).
    pub fn of_grpc_status(code: u32) -> Option<FailureClass> {
        let code = usize::try_from(code).ok()?;
        (1..=16)
            .contains(&code)
            .then(|| FailureClass::ALL[FailureClass::GRPC_FIRST + code - 1])
    }

    /// A gRPC status class (`grpc:NAME`).
    pub fn is_grpc(self) -> bool {
        self.slot() >= FailureClass::GRPC_FIRST
    }

    /// Classes that only some runs can meet (a journey's `check` and `extract`, gRPC's
    /// statuses): written in a result only when counted, so other runs' documents stay as
    /// they were.
    pub fn shown_only_when_counted(self) -> bool {
        self.journeys_only() || self.is_grpc()
    }

    /// Its place in [`FailureClass::ALL`], for per-class arrays.
    pub fn slot(self) -> usize {
        self as usize
    }
}

/// The end of one exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed(FailureClass),
}

impl Outcome {
    pub fn of_status(status: u16) -> Outcome {
        FailureClass::of_status(status).map_or(Outcome::Ok, Outcome::Failed)
    }
}

/// Failures counted per class. Counts saturate rather than overflow: they also come from files
/// (results, peer tools' reports), and a damaged one may hold any number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FailureCounts([u64; FailureClass::ALL.len()]);

impl FailureCounts {
    pub fn add(&mut self, class: FailureClass) {
        self.add_n(class, 1);
    }

    /// `n` failures of one class, as a tool reports them: one step, however many.
    pub fn add_n(&mut self, class: FailureClass, n: u64) {
        let slot = &mut self.0[class.slot()];
        *slot = slot.saturating_add(n);
    }

    pub fn get(&self, class: FailureClass) -> u64 {
        self.0[class.slot()]
    }

    pub fn total(&self) -> u64 {
        self.0.iter().fold(0, |sum, &n| sum.saturating_add(n))
    }

    /// The exact total, which may exceed `u64::MAX` when the counts came from a damaged file.
    pub fn total_wide(&self) -> u128 {
        self.0.iter().map(|&n| u128::from(n)).sum()
    }

    pub fn merge(&mut self, other: &FailureCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a = a.saturating_add(b);
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (FailureClass, u64)> + '_ {
        FailureClass::ALL.into_iter().map(|c| (c, self.get(c)))
    }

    /// The classes a live scrape lists: every one but gRPC's, which appear once counted, so a
    /// scrape of an HTTP run lists what it always has.
    pub fn listed(&self) -> impl Iterator<Item = (FailureClass, u64)> + '_ {
        self.iter().filter(|&(c, n)| n > 0 || !c.is_grpc())
    }
}

impl Serialize for FailureCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        // The journey and gRPC classes appear only when counted, so an HTTP run writes the
        // document it always has.
        let shown = |&(class, n): &(FailureClass, u64)| n > 0 || !class.shown_only_when_counted();
        let mut map = s.serialize_map(None)?;
        for (class, n) in self.iter().filter(shown) {
            map.serialize_entry(class.name(), &n)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for FailureCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = std::collections::BTreeMap::<FailureClass, u64>::deserialize(d)?;
        let mut counts = FailureCounts::default();
        for (class, n) in map {
            counts.0[class.slot()] = n;
        }
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_classes() {
        assert_eq!(Outcome::of_status(200), Outcome::Ok);
        assert_eq!(Outcome::of_status(204), Outcome::Ok);
        assert_eq!(
            Outcome::of_status(404),
            Outcome::Failed(FailureClass::Http4xx)
        );
        assert_eq!(
            Outcome::of_status(503),
            Outcome::Failed(FailureClass::Http5xx)
        );
        assert_eq!(
            Outcome::of_status(302),
            Outcome::Failed(FailureClass::HttpOther)
        );
    }

    #[test]
    fn counts_round_trip_through_json_by_name() {
        let mut c = FailureCounts::default();
        c.add(FailureClass::Http5xx);
        c.add(FailureClass::Http5xx);
        c.add(FailureClass::Timeout);
        let json = serde_json::to_value(c).unwrap();
        assert_eq!(json["http_5xx"], 2);
        assert_eq!(json["timeout"], 1);
        assert_eq!(json["connect"], 0);
        assert_eq!(serde_json::from_value::<FailureCounts>(json).unwrap(), c);
        assert_eq!(c.total(), 3);
    }

    #[test]
    fn journey_classes_are_written_only_when_counted() {
        let mut c = FailureCounts::default();
        let json = serde_json::to_value(c).unwrap();
        assert!(json.get("check").is_none() && json.get("extract").is_none());
        assert_eq!(json.as_object().unwrap().len(), 11, "{json}");
        c.add(FailureClass::Extract);
        let json = serde_json::to_value(c).unwrap();
        assert_eq!(
            (json["extract"].as_u64(), json.get("check")),
            (Some(1), None)
        );
        assert_eq!(serde_json::from_value::<FailureCounts>(json).unwrap(), c);
    }

    #[test]
    fn grpc_statuses_are_classes_in_code_order_written_only_when_counted() {
        assert_eq!(FailureClass::of_grpc_status(0), None, "OK is a success");
        assert_eq!(FailureClass::of_grpc_status(17), None, "outside the spec");
        let named: Vec<&str> = (1..=16)
            .map(|n| FailureClass::of_grpc_status(n).unwrap().name())
            .collect();
        assert_eq!(named[0], "grpc:CANCELLED");
        assert_eq!(named[3], "grpc:DEADLINE_EXCEEDED");
        assert_eq!(named[13], "grpc:UNAVAILABLE");
        assert_eq!(named[15], "grpc:UNAUTHENTICATED");
        assert!(FailureClass::ALL[..13].iter().all(|c| !c.is_grpc()));
        let mut c = FailureCounts::default();
        let http = serde_json::to_string(&c).unwrap();
        assert!(!http.contains("grpc"), "{http}");
        c.add(FailureClass::GrpcUnavailable);
        let json = serde_json::to_value(c).unwrap();
        assert_eq!(json["grpc:UNAVAILABLE"], 1);
        assert!(json.get("grpc:NOT_FOUND").is_none());
        assert_eq!(serde_json::from_value::<FailureCounts>(json).unwrap(), c);
    }

    #[test]
    fn a_scrape_lists_the_http_and_journey_classes_always_and_grpc_ones_once_counted() {
        let mut c = FailureCounts::default();
        let names = |c: &FailureCounts| c.listed().map(|(k, _)| k.name()).collect::<Vec<_>>();
        assert_eq!(
            names(&c),
            FailureClass::ALL[..13]
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
        );
        c.add(FailureClass::GrpcInternal);
        let listed = names(&c);
        assert_eq!(listed.len(), 14);
        assert_eq!(listed.last(), Some(&"grpc:INTERNAL"));
    }
}
