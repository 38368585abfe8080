import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Catches the signals that ask a process to stop (SIGINT, SIGTERM, SIGHUP) so it can clean up first: while
/// caught, their default action (ending the process at once) is off, and the handler runs on a dispatch queue,
/// where any code may run, instead of in a signal handler. ``release()`` restores the default actions.
public final class InterruptSignals {
    /// The signals caught.
    public static let numbers: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    private let sources: [any DispatchSourceSignal]

    /// Starts catching the signals; `handler` gets the number of each one that arrives.
    ///
    /// Uses the `signal(2)` system call (`SIG_IGN`) and a dispatch signal source (signalfd-like delivery).
    public init(_ handler: @escaping @Sendable (Int32) -> Void) {
        sources = Self.numbers.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }

    /// Stops catching the signals and restores their default actions.
    ///
    /// Uses the `signal(2)` system call (`SIG_DFL`).
    public func release() {
        for source in sources { source.cancel() }
        for number in Self.numbers { signal(number, SIG_DFL) }
    }
}

extension FileDescriptor {
    /// Whether the descriptor is a terminal.
    ///
    /// Uses the `isatty(3)` library call.
    public var isTerminal: Bool { isatty(rawValue) == 1 }
}
