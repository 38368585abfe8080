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
    /// Receives the engine's reports of failures it cannot throw (``Diagnostics``) instead of standard error.
    var diagnostics: (@Sendable (String) -> Void)?

    /// None: what the product opens with.
    static let none = EngineProbes()
}
