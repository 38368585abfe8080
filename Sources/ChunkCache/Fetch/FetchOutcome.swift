/// What one attempt at a fetch from the store came to: served, or what the store lacks (an origin domain's
/// fetch only), for the cold path to fill before the next attempt.
enum FetchOutcome<Served: Sendable>: Sendable {
    case served(Served)
    case missing(Absence)
}
