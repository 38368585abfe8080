import Foundation

/// The parts of a `Content-Range` header (RFC 9110 §14.4): `bytes FIRST-LAST/SIZE`, or `bytes */SIZE` on a 416.
struct ContentRange: Equatable {
    /// The bytes sent, nil for `*/SIZE`.
    let range: Range<Int64>?
    let size: Int64

    init?(_ header: String) {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst("bytes ".count)
        let parts = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let size = Int64(parts[1]), size >= 0 else { return nil }
        self.size = size
        if parts[0] == "*" {
            range = nil
            return
        }
        let bounds = parts[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]),
            first >= 0, last >= first, last < size
        else { return nil }
        range = first..<(last + 1)
    }
}

/// When to retry and how long to wait (CONTRACT §10: 3 tries, exponential backoff with jitter, `Retry-After`
/// honoured).
enum Backoff {
    /// The wait before retry `attempt` (1 for the first retry): `base` doubled per retry, with ±25 % jitter,
    /// or the server's `Retry-After` when it gave one, capped at `cap`.
    static func delay(attempt: Int, base: Duration, retryAfter: Duration?, cap: Duration) -> Duration {
        if let retryAfter { return min(retryAfter, cap) }
        let exponential = base * (1 << min(attempt - 1, 16))
        let jitter = Double.random(in: 0.75...1.25)
        return min(exponential * jitter, cap)
    }

    /// A `Retry-After` of delta seconds (the HTTP-date form is not worth a date parser here: servers that
    /// throttle send seconds).
    static func retryAfter(_ header: String?) -> Duration? {
        guard let header, let seconds = Int(header.trimmingCharacters(in: .whitespaces)), seconds >= 0 else {
            return nil
        }
        return .seconds(seconds)
    }
}
