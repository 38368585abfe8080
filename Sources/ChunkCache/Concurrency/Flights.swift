import Synchronization

/// The flights in progress, by what they download: the first task to ask for a key claims its flight and
/// must finish it; later ones get the same flight to wait for. A claim and a finish of one key are ordered
/// by one lock: a claim after the finish starts a new flight, never joins the ended one.
final class Flights<Key: Hashable & Sendable>: Sendable {
    private let flights = Mutex<[Key: Flight]>([:])

    /// The flight of `key`, and whether the caller just claimed it (then it must ``finish(_:_:with:)`` it).
    func claim(_ key: Key) -> (flight: Flight, claimed: Bool) {
        flights.withLock { flights in
            if let existing = flights[key] { return (existing, false) }
            let flight = Flight()
            flights[key] = flight
            return (flight, true)
        }
    }

    /// How many flights are in progress (a diagnostic).
    var count: Int { flights.withLock { $0.count } }

    /// The flight of `key` in progress, if any.
    func current(_ key: Key) -> Flight? { flights.withLock { $0[key] } }

    /// Ends a claimed flight and forgets it, so the next claim of `key` starts afresh.
    func finish(_ key: Key, _ flight: Flight, with outcome: Result<Void, any Error>) {
        flights.withLock { flights in
            if flights[key] === flight { flights[key] = nil }
        }
        flight.finish(outcome)
    }
}
