#if canImport(Glibc)
import Glibc
#endif

/// A signal, by its number: what ended a process that died of one.
public struct Signal: RawRepresentable, Hashable, Sendable {
    /// The signal's number (`SIG…`).
    public let rawValue: Int32

    /// The signal numbered `rawValue`.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `SIGSEGV`: an access outside the process's memory.
    public static let segmentationFault = Signal(rawValue: SIGSEGV)
    /// `SIGBUS`: an access to a mapped page with nothing behind it (a file mapping past a shrunk file's end).
    public static let busError = Signal(rawValue: SIGBUS)
    /// `SIGABRT`: `abort()`, as a failed C assertion calls it.
    public static let abort = Signal(rawValue: SIGABRT)
    /// `SIGILL`: an illegal instruction, as Swift's traps execute.
    public static let illegalInstruction = Signal(rawValue: SIGILL)
    /// `SIGTRAP`: a breakpoint trap, as Swift's traps raise on some machines.
    public static let trap = Signal(rawValue: SIGTRAP)
    /// `SIGFPE`: an arithmetic fault (a division by zero).
    public static let arithmeticFault = Signal(rawValue: SIGFPE)
    /// `SIGKILL`: killed, without a chance to clean up.
    public static let kill = Signal(rawValue: SIGKILL)
}
