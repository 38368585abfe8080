/// Points where a test steers or stops a fetch's destination, to reach what only a killed process shows.
/// Tests give them to one ``Destination/write(size:scratch:strategies:faults:inspect:assemble:)``, or to every
/// fetch of a store through the probes it opens the store with (``EngineProbes/destination``). The product
/// gives none, and unset they change nothing.
struct DestinationFaults: Sendable {
    /// Never use `O_TMPFILE`, as on a filesystem without it.
    var namedStaging = false
    /// Runs once the destination's file exists, with its staging path (`nil` while it has no name): a test
    /// looks at the folder, or holds the process there for its parent to kill.
    var stagingCreated: (@Sendable (_ stagingPath: String?) -> Void)?
}
