import Foundation
import Synchronization
import TestSupport
import Testing

@testable import LMDBKit

/// `lmdb.h`: "Do not have open an LMDB database twice in the same process at the same time."
@Suite struct RegistryTests {
    @Test("one MDB_env per directory: opens racing the last release never make a second handle")
    func opensRacingReleasesShareOneHandle() throws {
        try withTemporaryDirectory { dir in
            _ = try Environment.open(directory: dir, maxDatabases: 2, mapSize: 1 << 20)
            // Threads, not tasks: the race is between an `open` and another thread's last release.
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                for _ in 0..<300 {
                    let env = try? Environment.open(directory: dir, maxDatabases: 2, mapSize: nil)
                    _ = try? env?.read { _ in 0 }
                }
            }
            #expect(Environment.census.count(dir).peak == 1)
            #expect(Environment.census.count(dir).live == 0)
            let env = try Environment.open(directory: dir, maxDatabases: 2, mapSize: nil)
            #expect(env.activeReaders == 0)
        }
    }

    @Test("every open is a holder: the handle closes when the last holder goes, not the first")
    func theLastHolderCloses() throws {
        try withTemporaryDirectory { dir in
            var first: Environment? = try Environment.open(directory: dir, maxDatabases: 2, mapSize: 1 << 20)
            let second = try Environment.open(directory: dir, maxDatabases: 2, mapSize: nil)
            #expect(Environment.census.count(dir).live == 1)
            first = nil
            #expect(first == nil)
            #expect(Environment.census.count(dir).live == 1)
            let db = try second.openDatabase("main")
            try second.write { txn in try txn.put(db, key: bytes("k"), value: bytes("v")) }
            #expect(try second.read { try $0.value(db, "k") } == bytes("v"))
        }
        // `withTemporaryDirectory` has returned: `second` is gone too.
    }

    @Test("setMapSize needs the only holder: with another holder it is busy and the size stays")
    func resizingNeedsTheOnlyHolder() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment.open(directory: dir, maxDatabases: 2, mapSize: 1 << 20)
            do {
                let other = try Environment.open(directory: dir, maxDatabases: 2, mapSize: nil)
                #expect(throws: LMDBError.busy) { try env.setMapSize(4 << 20) }
                #expect(other.mapSize == 1 << 20)
            }
            try env.setMapSize(4 << 20)
            #expect(env.mapSize == 4 << 20)
        }
    }

    @Test(
        "one registry: SharedHandles joins, counts and closes on the last release; a stale holder counts down nothing"
    )
    func sharedHandlesCountHolders() throws {
        final class Box: Sendable {
            let id: Int
            init(_ id: Int) { self.id = id }
        }
        let handles = SharedHandles<String, Box>()
        let closed = Mutex<[Int]>([])
        let first = handles.acquire("a") { Box(1) }
        let joined = handles.acquire("a") { Box(2) }
        #expect(joined === first)
        #expect(handles.withHolderCount(of: "a") { $0 } == 2)
        #expect(throws: LMDBError.busy) {
            _ = try handles.acquire("a", join: { (_) throws(LMDBError) in throw .busy }) { () throws(LMDBError) in
                Box(3)
            }
        }
        #expect(handles.withHolderCount(of: "a") { $0 } == 2)
        let stale = Box(9)
        handles.release("a", held: { $0 === stale }) { box in closed.withLock { $0.append(box.id) } }
        #expect(handles.withHolderCount(of: "a") { $0 } == 2)
        handles.release("a", held: { $0 === first }) { box in closed.withLock { $0.append(box.id) } }
        #expect(closed.withLock { $0 }.isEmpty)
        handles.release("a", held: { $0 === first }) { box in closed.withLock { $0.append(box.id) } }
        #expect(closed.withLock { $0 } == [1])
        #expect(handles.withHolderCount(of: "a") { $0 } == 0)
        #expect(handles.acquire("a") { Box(4) }.id == 4)
    }
}
