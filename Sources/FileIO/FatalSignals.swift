import CLinuxShims

/// What a process does when it faults: for a command-line tool whose faults come from outside (a damaged
/// memory-mapped file), a one-line report and exit status 1 instead of dying of the signal.
public enum FatalSignals {
    /// From now on SIGSEGV, SIGBUS and SIGABRT (not Swift's traps, SIGILL and SIGFPE: a bug must crash loudly) write `stderrText` to stderr and `stdoutText`
    /// (when given) to stdout, then end the process with `_exit(1)`: no cleanup runs, as with the signal.
    ///
    /// Uses the `sigaction(2)` and `sigaltstack(2)` system calls.
    public static func reportAndExit(stderrText: String, stdoutText: String?) throws(Errno) {
        _ = try valueOrErrno(retryOnInterrupt: false) {
            if let stdoutText {
                return CLinuxShims_report_fatal_signals(stderrText, stdoutText)
            }
            return CLinuxShims_report_fatal_signals(stderrText, nil)
        }
    }
}
