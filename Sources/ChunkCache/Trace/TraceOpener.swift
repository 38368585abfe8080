/// Who opens items, as traces tell runs apart (<doc:Contract#15-Learned-prefetch>): the reads of one opener in
/// the first seconds after its first open are one run, and teach the trace of the item it opened first.
///
/// A mount names each process that opens files; the library's own fetches are each their item's opener.
public struct TraceOpener: Hashable, Sendable, CustomStringConvertible {
    let key: String

    /// An opener a caller names: reads given the same name, close in time, are one run.
    public init(_ name: String) { key = "name:" + name }

    /// A process, by its process id (the thread group's, so all of a program's threads are one opener).
    public static func process(_ id: Int32) -> TraceOpener { TraceOpener(key: "pid:\(id)") }

    /// The library's fetches of one item.
    static func fetches(of item: ItemIdentifier) -> TraceOpener {
        TraceOpener(key: "fetch:" + item.domain + "\u{0}" + item.rawValue)
    }

    private init(key: String) { self.key = key }

    public var description: String { key }
}
