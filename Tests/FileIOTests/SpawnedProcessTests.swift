import FileIO
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The platform calls the mount and the command line make through FileIO: starting and waiting for a process,
/// reading a kernel file whole, opening with typed modes, and pointing a standard stream elsewhere.
@Suite struct SpawnedProcessTests {
    /// Runs `script` with `/bin/sh -c` and waits for it.
    static func shell(
        _ script: String, environment: [String: String]? = nil, options: SpawnedProcess.Options = []
    ) throws -> SpawnedProcess.Termination {
        try SpawnedProcess.spawn("/bin/sh", arguments: ["-c", script], environment: environment, options: options)
            .wait()
    }

    @Test(
        "Platform calls behind one door: a spawned process's exit status and the signal it died of come back from wait")
    func exitStatusAndSignal() throws {
        #expect(try Self.shell("exit 3") == .exited(3))
        #expect(try Self.shell("exit 0") == .exited(0))
        #expect(try Self.shell("kill -SEGV $$") == .signalled(.segmentationFault))
        #expect(try Self.shell("kill -KILL $$") == .signalled(.kill))
    }

    @Test(
        "Platform calls behind one door: termination() is nil while the process runs and its ending once it has ended")
    func terminationWithoutWaiting() throws {
        try withTemporaryDirectory { dir throws in
            let signal = dir + "/go"
            let process = try SpawnedProcess.spawn(
                "/bin/sh", arguments: ["-c", "while [ ! -e \(signal) ]; do sleep 0.01; done; exit 5"])
            #expect(try process.termination() == nil, "it waits for \(signal)")
            try withNewFile(signal) { _ in }
            #expect(try process.wait() == .exited(5))
            #expect(throws: Errno(rawValue: ECHILD), "reaped already") { try process.termination() }
        }
    }

    @Test("Platform calls behind one door: spawn searches PATH only when asked, and a missing program is ENOENT")
    func searchPath() throws {
        let echo = try SpawnedProcess.spawn("true", arguments: [], options: .searchPath)
        #expect(try echo.wait() == .exited(0))
        #expect(throws: Errno.noSuchFile) { try SpawnedProcess.spawn("true", arguments: []) }
        #expect(throws: Errno.noSuchFile) {
            try SpawnedProcess.spawn("/nonexistent/chunkcache-missing", arguments: [], options: .searchPath)
        }
    }

    @Test("Platform calls behind one door: spawn passes the environment given, or this process's")
    func environment() throws {
        #expect(
            try Self.shell(#"[ "$CHUNKCACHE_SPAWN_TEST" = yes ]"#, environment: ["CHUNKCACHE_SPAWN_TEST": "yes"])
                == .exited(0))
        #expect(try Self.shell(#"[ -z "$HOME" ]"#, environment: ["CHUNKCACHE_SPAWN_TEST": "yes"]) == .exited(0))
        let home = try #require(ProcessInfo.processInfo.environment["HOME"])
        #expect(try Self.shell(#"[ "$HOME" = "\#(home)" ]"#) == .exited(0))
    }

    @Test(
        "Platform calls behind one door: a new session, /dev/null streams, and no inherited descriptor but 0, 1 and 2")
    func detachedOptions() throws {
        // Field 6 of /proc/PID/stat is the session id: a session leader's is its own pid.
        let leader = #"[ "$(cut -d' ' -f6 /proc/$$/stat)" = "$$" ]"#
        #expect(try Self.shell(leader, options: .newSession) == .exited(0))
        #expect(try Self.shell(leader) == .exited(1))
        let nullStreams =
            #"[ "$(readlink /proc/$$/fd/0)$(readlink /proc/$$/fd/1)$(readlink /proc/$$/fd/2)" = /dev/null/dev/null/dev/null ]"#
        #expect(try Self.shell(nullStreams, options: [.inputFromNullDevice, .outputToNullDevice]) == .exited(0))
        try withTemporaryDirectory { dir throws in
            let inherited = FileDescriptor(rawValue: Glibc.open(dir + "/open", O_RDWR | O_CREAT, 0o600))
            defer { try? inherited.close() }
            let hasIt = "[ -e /proc/$$/fd/\(inherited.rawValue) ]"
            #expect(try Self.shell(hasIt) == .exited(0), "opened without close-on-exec, it is inherited")
            #expect(try Self.shell(hasIt, options: .inheritStandardStreamsOnly) == .exited(1))
        }
    }

    @Test(
        "Platform calls behind one door: FileSystem.contents(of:) reads a kernel file whose stat size is 0, to its end")
    func contentsOfAKernelFile() throws {
        let mountinfo = try FileSystem.contents(of: "/proc/self/mountinfo")
        #expect(try FileSystem.status("/proc/self/mountinfo").st_size == 0)
        #expect(String(decoding: mountinfo, as: UTF8.self).contains(" / / "), "the root mount is listed")
        #expect(throws: Errno.noSuchFile) { try FileSystem.contents(of: "/proc/self/chunkcache-missing") }
        try withTemporaryDirectory { dir throws in
            let bytes = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            try withNewFile(dir + "/file") { try $0.write(bytes, at: 0) }
            #expect(try FileSystem.contents(of: dir + "/file") == bytes, "longer than one read's chunk")
            // With a limit the reads stop once past it: the caller sees more than the limit, not all of it.
            let limited = try FileSystem.contents(of: dir + "/file", limit: 1000)
            #expect(limited.count > 1000 && limited.count < bytes.count && limited == Array(bytes[0..<limited.count]))
        }
    }

    @Test("Platform calls behind one door: typed open modes are open(2)'s flags, and AccessMode reads them back")
    func typedOpen() throws {
        try withTemporaryDirectory { dir throws in
            let path = dir + "/file"
            let made = try FileDescriptor.open(path, .readWrite, options: [.create, .exclusiveCreate])
            try made.closeAfter { try made.write([1, 2, 3], at: 0) }
            #expect(throws: Errno.fileExists) {
                try FileDescriptor.open(path, .readWrite, options: [.create, .exclusiveCreate])
            }
            let reader = try FileDescriptor.open(path, .readOnly)
            try reader.closeAfter { () throws in
                #expect(try reader.read(count: 3, at: 0) == [1, 2, 3])
                #expect(throws: Errno.badFileDescriptor) { try reader.write([4], at: 0) }
            }
            let cut = try FileDescriptor.open(path, .writeOnly, options: .truncate)
            try cut.closeAfter { () throws in #expect(try cut.length == 0) }
        }
        #expect(FileDescriptor.AccessMode(openFlags: O_RDONLY | O_NONBLOCK) == .readOnly)
        #expect(FileDescriptor.AccessMode(openFlags: O_WRONLY | O_APPEND) == .writeOnly)
        #expect(FileDescriptor.AccessMode(openFlags: O_RDWR) == .readWrite)
        #expect(FileDescriptor.AccessMode(openFlags: O_ACCMODE) == nil)
    }

    @Test("Platform calls behind one door: duplicate(as:) makes a descriptor a second one of another's open file")
    func duplicateAs() throws {
        try withTemporaryDirectory { dir throws in
            try withNewFile(dir + "/a") { try $0.write([7], at: 0) }
            try withNewFile(dir + "/b") { try $0.write([9], at: 0) }
            let a = try FileDescriptor.open(dir + "/a", .readOnly)
            let b = try FileDescriptor.open(dir + "/b", .readOnly)
            defer { try? a.close() }
            try b.closeAfter {
                try a.duplicate(as: b)
                #expect(try b.read(count: 1, at: 0) == [7], "b now reads a's file")
            }
            #expect(throws: Errno.badFileDescriptor) { try FileDescriptor(rawValue: -1).duplicate(as: a) }
        }
    }
}
