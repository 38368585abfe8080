import Foundation
import LMDBKit
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a test left open in its temporary directory: file descriptors of this process whose files lie inside
/// it, and read transactions of LMDB environments opened inside it.
///
/// Swift Testing runs the tests of a process in parallel, so a count of every descriptor of the process would
/// see other tests' files come and go. Each test has a directory of its own, though, so what points inside
/// it is that test's alone.
public struct Leaks: Equatable, CustomStringConvertible, Sendable {
    /// The paths the leaked descriptors point to (`/proc/self/fd` links, with " (deleted)" for unlinked files).
    public var openFiles: [String]
    /// The read transactions still open on environments inside the directory.
    public var readTransactions: Int

    /// What leaked: descriptors open on `openFiles` and `readTransactions` read transactions.
    public init(openFiles: [String], readTransactions: Int) {
        self.openFiles = openFiles
        self.readTransactions = readTransactions
    }

    /// Whether nothing leaked.
    public var isEmpty: Bool { openFiles.isEmpty && readTransactions == 0 }

    public var description: String {
        var parts: [String] = []
        if !openFiles.isEmpty {
            parts.append("\(openFiles.count) file descriptor(s) open on \(openFiles.joined(separator: ", "))")
        }
        if readTransactions > 0 { parts.append("\(readTransactions) LMDB read transaction(s) open") }
        return parts.isEmpty ? "no leaks" : parts.joined(separator: "; ")
    }

    /// What is open inside `directory` now.
    public static func now(in directory: String) -> Leaks {
        Leaks(
            openFiles: openDescriptors(inside: directory),
            readTransactions: Environment.liveReadTransactions(under: directory))
    }

    /// What is still open inside `directory` after waiting up to `patience` for it to close.
    ///
    /// A store closes when its last holder goes, and a background job of a test's cache (a usage flush a
    /// second after a fetch, the commit of downloads stored behind a fetch) may hold it a moment after the
    /// test's body returned; a leak is what is still open after that.
    public static func remaining(in directory: String, patience: Duration = .seconds(5)) -> Leaks {
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        var leaks = now(in: directory)
        while !leaks.isEmpty && clock.now < deadline {
            usleep(20_000)
            leaks = now(in: directory)
        }
        return leaks
    }

    /// The same wait, for asynchronous callers: it suspends instead of blocking a thread of the pool.
    public static func remaining(in directory: String, patience: Duration = .seconds(5)) async -> Leaks {
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        var leaks = now(in: directory)
        while !leaks.isEmpty && clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
            leaks = now(in: directory)
        }
        return leaks
    }

    /// The targets of this process's descriptors that lie inside `directory`.
    static func openDescriptors(inside directory: String) -> [String] {
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else {
            return []
        }
        return descriptors.compactMap { name -> String? in
            // A descriptor closed since the listing has no link any more; one reused since points elsewhere.
            guard let target = linkTarget("/proc/self/fd/" + name) else { return nil }
            return target == directory || target.hasPrefix(prefix) ? target : nil
        }.sorted()
    }

    private static func linkTarget(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 32)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        buffer[count] = 0
        return String(cString: buffer)
    }
}

/// Records an issue naming what is still open inside `directory` once `body` is done with it.
func expectNoLeaks(in directory: String) {
    let leaks = Leaks.remaining(in: directory)
    if !leaks.isEmpty { Issue.record("leaked in \(directory): \(leaks)") }
}

/// The same check for asynchronous callers.
func expectNoLeaks(in directory: String) async {
    let leaks = await Leaks.remaining(in: directory)
    if !leaks.isEmpty { Issue.record("leaked in \(directory): \(leaks)") }
}
