import FileIO
import Foundation
import Synchronization

/// The file of a large cold fetch (`fetch --out`, a whole-file hand-off), written from the fetch's download
/// as the bytes arrive while the store is written behind it (<doc:Contract#10-Origins-the-cold-path>): nothing the
/// fetch downloaded is read back from the store.
///
/// Made when a fetch goes to its origin. It serves only when the fetch's own downloads bring every chunk of
/// the range (``DirectBytes``, file mode: the discovery's first bytes and the fill's); otherwise it is given
/// up and the fetch is written from the store as before. A file never finished is removed.
///
/// Who may call what: ``target(for:range:)`` and ``giveUp()`` from any task; ``finish(_:store:)`` once, after
/// every download that writes into the file has finished writing; ``close()`` once, last. The file itself is
/// held by an ``Owner`` that the fetch and each write running into it share: it closes when the last of them
/// lets go, so a download still writing when the fetch ends finishes its `pwrite` first.
final class StreamedFile: Sendable {
    /// Where the file goes once complete.
    private enum Place: Sendable {
        /// A hand-off in the store's `tmp/`, already at its name.
        case handOff(path: String)
        /// The caller's destination: the unnamed or staging file is given its name at the end.
        case destination(Destination)
    }

    /// The file, open, and how it ends: a hand-off's ``OwnedFile`` is removed unless kept, a destination's
    /// ``PendingFile`` loses its staging name unless placed. Shared by the fetch and the writes running into
    /// the file; the last to let it go closes it (``deinit``), so no count of writers is kept by hand.
    final class Owner: Sendable {
        let descriptor: FileDescriptor
        private let handOff: Mutex<OwnedFile?>
        private let pending: Mutex<PendingFile?>

        init(handOff file: consuming sending OwnedFile) {
            descriptor = file.descriptor
            handOff = Mutex(Optional(file))
            pending = Mutex(nil)
        }

        init(destination file: PendingFile) {
            descriptor = file.descriptor
            handOff = Mutex(nil)
            pending = Mutex(file)
        }

        /// Keeps the hand-off's name when the file closes.
        func keep() {
            handOff.withLock { file in
                guard var kept = file.take() else { return }
                kept.keep()
                file = consume kept
            }
        }

        /// Gives the destination's file its name (``PendingFile/place(at:replaceExisting:)``).
        fileprivate func place(at path: String, replaceExisting: Bool) throws(Errno) {
            try pending.withLock { (pending) throws(Errno) in
                guard pending != nil else { preconditionFailure("a destination has a file") }
                try pending!.place(at: path, replaceExisting: replaceExisting)
            }
        }

        deinit {
            // The hand-off's OwnedFile closes (and removes) itself.
            pending.withLock { $0 }?.close()
        }
    }

    private struct State: Sendable {
        /// Nil once closed: the writes running, if any, hold the file until they end.
        var owner: Owner?
        var target: DirectBytes?
        var usable = true
    }

    private let place: Place
    private let state: Mutex<State>

    private init(_ owner: Owner, place: Place) {
        self.place = place
        state = Mutex(State(owner: owner))
    }

    /// The streamed file of `job`, or nil when the job is not one a download can stream: a hand-off of a
    /// range small enough for memory (``DirectBytes``).
    static func make(for job: FetchJob, engine: Engine) throws -> StreamedFile? {
        switch job.destination {
        case .handOff:
            if let range = job.minimalRange, range.length <= FetchThresholds.inlineBytes { return nil }
            let file = try HandOff.createOwnedFile(in: engine.store.tmpPath, prefix: "fetch-")
            let path = file.path
            return StreamedFile(Owner(handOff: file), place: .handOff(path: path))
        case .clone(let path, let replaceExisting):
            let destination = try Destination(path: path, replaceExisting: replaceExisting)
            let faults = engine.probes.destination
            let pending = try PendingFile.create(in: destination.directory, unnamed: !faults.namedStaging)
            faults.stagingCreated?(pending.stagingPath)
            return StreamedFile(Owner(destination: pending), place: .destination(destination))
        }
    }

    /// What a download writes `range` of `version` into: made at the first call, the same one after; nil
    /// once the file was given up or closed, or for another version or range.
    func target(for version: VersionRecord, range: ByteRange) -> DirectBytes? {
        guard range.length > 0 else { return nil }
        return state.withLock { state in
            guard state.usable, let owner = state.owner else { return nil }
            if let target = state.target {
                guard target.manifestID == version.manifestID, target.range == range else { return nil }
                return target
            }
            let target = DirectBytes(
                range: range, manifestID: version.manifestID, chunkShift: version.layout.shift,
                file: HandOffWriter(file: owner.descriptor, holesForZeros: version.isWhole(range)), owner: owner)
            state.target = target
            return target
        }
    }

    /// The fetch waits for the store instead: the file is never used again.
    func giveUp() {
        let target = state.withLock { state in
            state.usable = false
            return state.target
        }
        target?.fail(CancellationError())
    }

    /// Gives the complete file its size and its place, and returns the fetch's result: the file holds every
    /// byte of `downloaded.range`, all written from the download.
    func finish(_ downloaded: ChunkCache.DownloadedRange, engine: Engine) throws -> FetchResult {
        let (owner, target) = state.withLock { ($0.owner, $0.target) }
        guard let owner else { preconditionFailure("a streamed file is finished before it is closed") }
        let flags: MaterializationFlags = target?.leftHoles ?? false ? .knownSparseRanges : []
        do {
            try owner.descriptor.resize(to: downloaded.version.size)
        } catch {
            throw CacheError.file(error, path: path, doing: "sizing the fetched file")
        }
        switch place {
        case .handOff(let path):
            owner.keep()
            return downloaded.served(
                at: URL(fileURLWithPath: path, isDirectory: false), flags: flags, owner: .caller, engine: engine)
        case .destination(let destination):
            // Only this call touches the pending file now: every download finished writing into it.
            do {
                try owner.place(at: destination.path, replaceExisting: destination.replaceExisting)
            } catch {
                throw CacheError.file(error, path: destination.path, doing: "moving the file into place")
            }
            return downloaded.served(
                at: URL(fileURLWithPath: destination.path, isDirectory: false), flags: flags, owner: .destination,
                engine: engine)
        }
    }

    /// Lets the file go: it closes once no download writes into it any more; one not finished is removed.
    func close() {
        let (owner, target) = state.withLock { state in (state.owner.take(), state.target) }
        target?.retire()
        // The fetch's hold ends here; a write still running holds the file until it ends.
        withExtendedLifetime(owner) {}
    }

    private var path: String {
        switch place {
        case .handOff(let path): path
        case .destination(let destination): destination.path
        }
    }
}
