/// The chunk ranges fetches of this process downloaded and will read (``PolicyProtection``), by fetch: a
/// domain type over a ``ClaimTable``, which gives its guarantees (a fetch's ranges stand from ``Claim/protect(_:_:)``
/// to ``Claim/end()``, and ``protection`` sees every range that stands when it is read).
final class UnreadDownloads: Sendable {
    /// Chunks `chunks` of manifest `manifestID`.
    fileprivate struct Unread: Sendable {
        let manifestID: UInt64
        let chunks: ClosedRange<Int64>
    }

    private let table = ClaimTable<Unread>()

    /// One fetch's claim: what it adds stays spared until ``end()``. A value (no allocation on the warm path).
    struct Claim: Sendable {
        fileprivate let claim: ClaimTable<Unread>.Claim

        /// Spares the chunks of `range` of `version` until the fetch ends.
        func protect(_ version: VersionRecord, _ range: ByteRange) {
            guard range.length > 0 else { return }
            let shift = version.layout.shift
            claim.add(
                Unread(manifestID: version.manifestID, chunks: (range.location >> shift)...((range.end - 1) >> shift)))
        }

        /// The fetch is done: its chunks may go.
        func end() { claim.end() }
    }

    func claim() -> Claim { Claim(claim: table.claim()) }

    var protection: PolicyProtection {
        var protection = PolicyProtection()
        for unread in table.entries { protection.ranges[unread.manifestID, default: []].append(unread.chunks) }
        return protection
    }
}
