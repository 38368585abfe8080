import FileIO
import Foundation
import Synchronization

/// The file of a large cold fetch (`fetch --out`, a whole-file hand-off), written from the fetch's download
/// as the bytes arrive while the store is written behind it (CONTRACT §10): nothing the fetch downloaded is
/// read back from the store.
///
/// Made when a fetch goes to its origin. It serves only when the fetch's own downloads bring every chunk of
/// the range (``DirectBytes``, file mode: the discovery's first bytes and the fill's); otherwise it is given
/// up and the fetch is written from the store as before. A file never finished is removed.
final class StreamedFile: Sendable {
    /// Where the file goes once complete.
    private enum Place: Sendable {
        /// A hand-off in the store's `tmp/`, already at its name.
        case handOff(path: String)
        /// The caller's destination: the unnamed or staging file is given its name at the end.
        case destination(Destination)
    }

    private struct State: Sendable {
        var pending: PendingFile?
        var target: DirectBytes?
        var usable = true
        var done = false
    }

    let descriptor: FileDescriptor
    private let place: Place
    private let state: Mutex<State>

    private init(descriptor: FileDescriptor, place: Place, pending: PendingFile?) {
        self.descriptor = descriptor
        self.place = place
        state = Mutex(State(pending: pending))
    }

    /// The streamed file of `job`, or nil when the job is not one a download can stream: a hand-off of a
    /// range small enough for memory (``DirectBytes``), or a test's hooked fetch.
    static func make(for job: FetchJob, store: Store) throws -> StreamedFile? {
        guard job.beforeChunk == nil, job.inspectClone == nil, job.strategies == ChunkCache.cloneStrategies else {
            return nil
        }
        switch job.destination {
        case .handOff:
            if let range = job.minimalRange, range.length <= FetchThresholds.inlineBytes { return nil }
            let (descriptor, path) = try HandOff.createUniqueFile(in: store.tmpPath, prefix: "fetch-")
            return StreamedFile(descriptor: descriptor, place: .handOff(path: path), pending: nil)
        case .clone(let path, let replaceExisting):
            let destination = try Destination(path: path, replaceExisting: replaceExisting)
            let faults = DestinationFaults.inProcess.withLock { $0 }
            let pending = try PendingFile.create(in: destination.directory, unnamed: !faults.namedStaging)
            faults.stagingCreated?(pending.stagingPath)
            return StreamedFile(descriptor: pending.descriptor, place: .destination(destination), pending: pending)
        }
    }

    /// What a download writes `range` of `version` into: made at the first call, the same one after; nil
    /// once the file was given up, or for another version or range.
    func target(for version: VersionRecord, range: ByteRange) -> DirectBytes? {
        guard range.length > 0 else { return nil }
        return state.withLock { state in
            guard state.usable else { return nil }
            if let target = state.target {
                guard target.manifestID == version.manifestID, target.range == range else { return nil }
                return target
            }
            let target = DirectBytes(
                range: range, manifestID: version.manifestID, chunkShift: version.layout.shift,
                file: HandOffWriter(file: descriptor, holesForZeros: version.isWhole(range)))
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
        let target = state.withLock { $0.target }
        let flags: MaterializationFlags = target?.leftHoles ?? false ? .knownSparseRanges : []
        do {
            try descriptor.resize(to: downloaded.version.size)
        } catch {
            throw CacheError.file(error, path: path, doing: "sizing the fetched file")
        }
        switch place {
        case .handOff(let path):
            state.withLock { $0.done = true }
            return downloaded.served(
                at: URL(fileURLWithPath: path, isDirectory: false), flags: flags, owner: .caller, engine: engine)
        case .destination(let destination):
            // Only this call touches the pending file now: every download finished writing into it.
            guard var pending = state.withLock({ $0.pending }) else { preconditionFailure("a destination has a file") }
            do {
                try pending.place(at: destination.path, replaceExisting: destination.replaceExisting)
            } catch {
                state.withLock { $0.pending = pending }
                throw CacheError.file(error, path: destination.path, doing: "moving the file into place")
            }
            state.withLock {
                $0.pending = pending
                $0.done = true
            }
            return downloaded.served(
                at: URL(fileURLWithPath: destination.path, isDirectory: false), flags: flags, owner: .destination,
                engine: engine)
        }
    }

    /// Closes the file, once no download writes into it any more; one not finished is removed.
    func close() {
        let (pending, done, target) = state.withLock { ($0.pending, $0.done, $0.target) }
        let descriptor = self.descriptor
        let place = self.place
        let closing: @Sendable () -> Void = {
            switch place {
            case .handOff(let path):
                try? descriptor.close()
                if !done { try? FileSystem.unlink(path) }
            case .destination:
                pending?.close()
            }
        }
        guard let target else { return closing() }
        target.retire(then: closing)
    }

    private var path: String {
        switch place {
        case .handOff(let path): path
        case .destination(let destination): destination.path
        }
    }
}
