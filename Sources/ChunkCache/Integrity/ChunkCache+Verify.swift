import Crypto
import FileIO
import Foundation
import LMDBKit

extension ChunkCache {
    /// Re-hashes every chunk with SHA-256, checks every downloaded chunk not settled yet (a fill: its bytes
    /// against their XXH3 and the SHA-256 its manifest knew, its record against its manifest entry), checks
    /// every record against its seal, and checks that every manifest's chunks are there and that it hashes to
    /// its version's root.
    ///
    /// Damaged records are reported in ``VerifyReport/damagedRecords`` and ``VerifyReport/damagedVersions``;
    /// finding them is not an error.
    ///
    /// This runs in the calling process, and LMDB trusts its pages: a damaged B-tree page can crash the
    /// process (SIGSEGV, SIGBUS, or an assertion's SIGABRT) instead of failing with an error. `chunkcache
    /// verify` therefore runs this walk in a child process, passing `walking` to learn where each walk is,
    /// and reports a crash of the child as damage (then `chunkcache recover --to NEWSTORE` salvages what
    /// can be read). A host that must survive a damaged store does the same.
    ///
    /// - Parameters:
    ///   - repair: Remove the corrupt chunks and mark the manifest entries that used them `absent`,
    ///     so fetches needing them report `versionNoLongerAvailable` (or fall back) instead of bad bytes; drop
    ///     the corrupt fills the same way (an origin domain downloads them again when read), and mend the
    ///     fills' orphan records and files and their counter.
    ///   - walking: Called, on the walking thread, with the database and the key about to be checked, for
    ///     every record; the key is valid only during the call.
    public func verify(
        repair: Bool = false, walking: (@Sendable (_ database: String, _ key: UnsafeRawBufferPointer) -> Void)? = nil
    ) async throws -> VerifyReport {
        let store = self.store
        return try await runBlocking(doing: "verifying", store: store.path) { cancellation in
            try Verifier.verify(store, repair: repair, cancellation: cancellation, observer: walking)
        }
    }
}
