import FileIO

/// One status line on stderr, rewritten in place (`\r`, erase line) at most ten times a second, and only
/// when stderr is a terminal: never on stdout, never in a pipe or a log file.
package final class ProgressLine {
    private let enabled: Bool
    private var lastShown: UInt64 = 0
    private var visible = false

    package init(enabled: Bool = FileDescriptor.standardError.isTerminal) { self.enabled = enabled }

    /// Shows `text`, unless a line was shown less than 100 ms ago and `force` is false.
    package func show(_ text: @autoclosure () -> String, force: Bool = false) {
        guard enabled else { return }
        let now = Clocks.monotonicNanoseconds()
        guard force || !visible || now - lastShown >= 100_000_000 else { return }
        lastShown = now
        visible = true
        emit("\r\u{1B}[K" + text())
    }

    /// Erases the line, before the result is printed.
    package func clear() {
        guard enabled, visible else { return }
        visible = false
        emit("\r\u{1B}[K")
    }

    private func emit(_ text: String) {
        // A progress line is best effort: a failed write leaves it out.
        try? Array(text.utf8).withUnsafeBytes { try FileDescriptor.standardError.writeAll($0) }
    }
}
