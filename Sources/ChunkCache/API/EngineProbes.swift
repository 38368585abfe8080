import FileIO

/// What a test may inject when it opens a store; empty in the product, where each probe is absent and changes
/// nothing. Tests pass them to the engine's opening path (`ChunkCache.open(…, probes:)`,
/// ``Engine/open(at:layout:maxSize:level:probes:)``) rather than set process-wide state, so a probed store runs
/// the product's code, and other stores of the process run without them.
///
/// The engine of a store directory is shared by every ``ChunkCache`` of that directory in the process: the
/// first open's probes hold for as long as the engine is open, and a later open's are ignored. A test that
/// probes opens its own store.
struct EngineProbes: Sendable {
    /// Where a fetch's destination is steered or stopped (``DestinationFaults``): every destination and
    /// streamed file of the engine's fetches takes them.
    var destination = DestinationFaults()
    /// Runs on the writer queue after each transaction, committed or not (``Writer``): a test pauses writes
    /// between two transactions of an ingest, to act while its pending manifest is on disk, or counts them.
    var afterEachTransaction: (@Sendable () -> Void)?
    /// Runs before each settle batch commits (``Settler``): a throw undoes the batch, as a kill there would.
    var beforeBatchCommit: (@Sendable () throws -> Void)?
    /// Runs last in each write transaction that stores a batch of downloaded chunks (``ChunkSink``), before it
    /// commits: a throw undoes the transaction and fails the commit, as a full store fails one, and the
    /// download ends with that failure.
    var beforeDownloadCommit: (@Sendable () throws -> Void)?
    /// Runs in a small cold fetch after its downloads start and before it reads the chunks of its range the
    /// store holds: a test holds it there until a download has handed a chunk over.
    var beforeTakingStored: (@Sendable () -> Void)?
    /// Receives the engine's reports of failures it cannot throw (``Diagnostics``) instead of standard error.
    var diagnostics: (@Sendable (String) -> Void)?
    /// The clone strategies a fetch to a destination may use (``ChunkCache/cloneStrategies``, every one, in the
    /// product). Without `.reflink` the clone route is taken whatever the filesystem, so tests run the copying
    /// fallbacks. A cold fetch to a destination writes its download into the destination as it arrives and
    /// clones nothing, so this does not reach it.
    var cloneStrategies = ChunkCache.cloneStrategies
    /// Sees a fetch's finished clone before it is named (tests look at its extents, or take its name first).
    /// Reached where a fetch clones from the store; a cold fetch's destination, written as its download
    /// arrives, is never cloned and never seen here.
    var inspectClone: (@Sendable (FileDescriptor) -> Void)?
    /// Called with each chunk's index before a fetch reads the chunk from the store, so a test acts at a known
    /// point (cancels the fetch, changes the store) without sleeping. Bytes a cold fetch serves from its
    /// download are never read from the store: they pass no chunk here.
    var beforeChunk: (@Sendable (Int64) -> Void)?

    /// None: what the product opens with.
    static let none = EngineProbes()
}
