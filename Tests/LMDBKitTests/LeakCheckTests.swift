import Foundation
import Synchronization
import TestSupport
import Testing

@testable import LMDBKit

#if canImport(Glibc)
import Glibc
#endif

/// The leak check every `withTemporaryDirectory` runs (Tests/TestSupport/LeakCheck.swift) finds what a test
/// left open in its own directory, and only there.
@Suite struct LeakCheckTests {
    @Test("The tests' leak check names a file descriptor left open in the test's directory, and nothing else")
    func findsALeakedDescriptor() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/left-open"
            let fd = open(path, O_CREAT | O_RDWR, 0o600)
            try #require(fd >= 0)
            #expect(Leaks.now(in: dir) == Leaks(openFiles: [path], readTransactions: 0))
            // A descriptor of another directory is another test's business.
            #expect(Leaks.now(in: dir + "/elsewhere").isEmpty)
            unlink(path)
            #expect(Leaks.now(in: dir).openFiles == [path + " (deleted)"], "an unlinked file still counts")
            close(fd)
            #expect(Leaks.now(in: dir).isEmpty)
        }
    }

    @Test("withTemporaryDirectory fails a test whose body leaks a file descriptor")
    func theWrapperRecordsTheLeak() async throws {
        // The asynchronous form: its wait for the descriptor to close suspends, and blocks no thread other
        // tests need for the 5 seconds the check gives a leak.
        let leaked = Mutex<Int32>(-1)
        try await withKnownIssue("the body leaks a descriptor on purpose") {
            try await withTemporaryDirectory { dir in
                let fd = open(dir + "/leaked", O_CREAT | O_RDWR, 0o600)
                leaked.withLock { $0 = fd }
                await Task.yield()
            }
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("1 file descriptor(s) open on") }
        }
        let fd = leaked.withLock { $0 }
        #expect(fd >= 0)
        close(fd)
    }

    @Test("The tests' leak check counts the read transactions open on an environment in the test's directory")
    func findsAnOpenReadTransaction() throws {
        try withTemporaryDirectory { dir in
            var env: Environment? = try Environment.open(directory: dir, maxDatabases: 2, mapSize: 1 << 20)
            #expect(Leaks.now(in: dir).readTransactions == 0)
            let inside = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let finished = DispatchSemaphore(value: 0)
            // Unowned: the thread must not keep the environment open after its read.
            let reader = Thread { [unowned environment = env!] in
                _ = try? environment.read { _ in
                    inside.signal()
                    release.wait()
                }
                finished.signal()
            }
            reader.start()
            inside.wait()
            let during = Leaks.now(in: dir)
            release.signal()
            finished.wait()
            #expect(during.readTransactions == 1)
            #expect(during.openFiles.contains(dir + "/data.mdb"), "the open environment's files: \(during)")
            #expect(Leaks.now(in: dir).readTransactions == 0, "the read is over")
            env = nil
            #expect(env == nil)
            #expect(Leaks.now(in: dir).isEmpty, "closed with its last holder")
        }
    }
}
