import LMDBKit
import Synchronization

/// An open ``Store`` and the services this process runs on it: origin sessions, last-use notes, imports,
/// the space bound and reserve, the change signal and the settler. The ``ChunkCache`` values of one store
/// directory share one engine, as they share its one store; code that only reads or writes the databases
/// takes the ``Store``, code that needs a service takes the engine.
final class Engine: Sendable {
    /// The environment, databases, writer, codecs and layout: storage, and nothing above it.
    let store: Store
    /// This process's origin clients, downloads in flight and read-ahead, by domain
    /// (<doc:Contract#10-Origins-the-cold-path>).
    let origins = OriginSessions()
    /// Last-use dates noted by this process's fetches, written in batches.
    let usage = UsageRecorder()
    /// Who hears of imports this process finishes.
    let importEvents = ImportEvents()
    /// Imports this process runs now.
    let runningImports = RunningImports()
    /// The store's bound: eviction after commits, room made before downloads and puts
    /// (<doc:Contract#12-A-bounded-cache>).
    let space: SpaceBound
    /// Disk held back for fetches on a full disk.
    let reserve: SpaceReserve
    /// Wakes the waiters of changes, in this process and others.
    let changes: ChangeSignal
    /// What the test that opened the engine injected; ``EngineProbes/none`` in the product.
    let probes: EngineProbes
    /// Where failures that cannot be thrown are reported (the store's).
    var diagnostics: Diagnostics { store.diagnostics }
    /// What this process's openers read, learned into traces, and the prefetches traces start
    /// (<doc:Contract#15-Learned-prefetch>).
    let traces = TraceSessions()
    /// The commits of downloaded chunks, gathered into one transaction while another commits.
    let downloadCommits = DownloadCommits()
    /// Settles downloaded chunks behind the readers (<doc:Contract#10-Origins-the-cold-path>, ``Settler``).
    let settler = Settler()
    /// How many fetch plans this process made
    /// (``FetchPlanner/plan(engine:domain:item:requested:minimal:alignment:options:request:in:)``): the cold path goes
    /// one way, and tests check a miss is planned once.
    let plansMade = Atomic<Int>(0)

    /// Binds the services to `store`: its writer keeps the bound around commits and signals the changes
    /// they log.
    private init(store: Store, probes: EngineProbes) {
        self.store = store
        self.probes = probes
        let writer = store.writer
        space = SpaceBound(
            environment: store.environment, dbs: store.dbs, path: store.path, maxSize: store.maxSize,
            minFree: store.recordedMinFree, codecs: store.codecs, diagnostics: store.diagnostics,
            enqueue: { [weak writer] work in writer?.enqueue(work) })
        writer.bind(space)
        changes = ChangeSignal(folder: store.path, marks: store.dbs.changeMarks, diagnostics: store.diagnostics)
        writer.signalChanges(through: changes)
        reserve = SpaceReserve(storePath: store.path)
    }

    /// Every engine open in this process, by canonical store path, held by the ``ChunkCache`` values using
    /// it. Counted, not weakly held: the engine leaves the registry when its last cache goes, even while a
    /// job in flight still holds the object, so the next open reads the store afresh (its environment is
    /// still the one `MDB_env` of the directory: ``Environment`` keeps that rule).
    private static let openEngines = SharedHandles<String, Engine>()

    /// The engine of the store at `rawPath`, creating the store (mode 0700) when it does not exist: the one
    /// this process already has open there, else a new one. One engine and one ``Store`` per environment per
    /// process, so one writer queue, one codec pool and one set of services whatever the number of
    /// ``ChunkCache`` values. Each call is one holder: call ``release()`` when done. The parameters are
    /// those of ``Store/open(directory:layout:maxSize:level:afterEachTransaction:diagnostics:)``, and `probes`
    /// what a test injects: an engine already open keeps the probes of its first open (``EngineProbes``).
    static func open(
        at rawPath: String, layout: ChunkLayout?, maxSize: Int64?, level: Int32 = 3, probes: EngineProbes = .none
    ) throws -> Engine {
        let path = try Store.prepareDirectory(rawPath)
        // Opening under the registry's lock: two opens of one path must not both find no store and make two.
        return try openEngines.acquire(
            path, join: { engine in try engine.store.check(layout: layout, maxSize: maxSize) }
        ) {
            let store = try Store.open(
                directory: path, layout: layout, maxSize: maxSize, level: level,
                afterEachTransaction: probes.afterEachTransaction,
                diagnostics: Diagnostics(probes: probes.diagnostics))
            return Engine(store: store, probes: probes)
        }
    }

    /// Ends one holder's use of the engine; the last one takes it out of the registry.
    func release() {
        Self.openEngines.release(store.path, held: { $0 === self })
    }
}
