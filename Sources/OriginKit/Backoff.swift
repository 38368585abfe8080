import Foundation

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
