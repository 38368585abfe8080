import FileIO
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// FileIO's doors for the benchmarks and the fuzz targets, which import no platform C library (`SyscallHomeTests`
/// checks every module): typed opens, the clocks, gathered writes, the standard error stream and the process's id.
@Suite struct PlatformDoorTests {
    @Test(
        "Platform calls behind one door: a typed open reads, replaces or creates a new file with its open(2) flags, and closes on exec"
    )
    func typedOpens() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/file"
            #expect(throws: Errno.noSuchFile) { try FileDescriptor.open(path, .readOnly) }
            let created = try FileDescriptor.open(path, .readWrite, options: [.create, .exclusiveCreate], mode: 0o640)
            try created.closeAfter {
                #expect(fcntl(created.rawValue, F_GETFD) & FD_CLOEXEC != 0)
                #expect(fcntl(created.rawValue, F_GETFL) & O_ACCMODE == O_RDWR)
                try Array("old bytes".utf8).withUnsafeBytes { try created.writeAll($0) }
            }
            #expect(try FileSystem.status(path).st_mode & 0o777 == 0o640)
            #expect(throws: Errno.fileExists) {
                try FileDescriptor.open(path, .readWrite, options: [.create, .exclusiveCreate])
            }
            let replaced = try FileDescriptor.open(path, .writeOnly, options: [.create, .truncate])
            try replaced.closeAfter {
                #expect(fcntl(replaced.rawValue, F_GETFD) & FD_CLOEXEC != 0)
                #expect(fcntl(replaced.rawValue, F_GETFL) & O_ACCMODE == O_WRONLY)
                let size = try replaced.status().st_size
                #expect(size == 0, "a replacing open empties the file")
            }
            let read = try FileDescriptor.open(path, .readOnly)
            try read.closeAfter {
                #expect(fcntl(read.rawValue, F_GETFD) & FD_CLOEXEC != 0)
                #expect(fcntl(read.rawValue, F_GETFL) & O_ACCMODE == O_RDONLY)
            }
        }
    }

    @Test("Platform calls behind one door: a gathered write of IOVectors puts each buffer after the one before")
    func gatheredWrite() throws {
        try withTemporaryDirectory { dir in
            let file = try FileDescriptor.open(dir + "/file", .readWrite, options: [.create, .exclusiveCreate])
            try file.closeAfter {
                var first = Array("head-".utf8)
                var second = Array("tail".utf8)
                try first.withUnsafeMutableBytes { a in
                    try second.withUnsafeMutableBytes { b in
                        var vectors = [IOVector(a.baseAddress!, count: a.count), IOVector(b.baseAddress!, count: 3)]
                        try vectors.withUnsafeMutableBufferPointer {
                            try file.writeAll(toAbsoluteOffset: 2, vectors: $0)
                        }
                    }
                }
                var bytes = [UInt8](repeating: 0xFF, count: 16)
                let count = try bytes.withUnsafeMutableBytes { try file.readAll(fromAbsoluteOffset: 0, into: $0) }
                #expect(Array(bytes[..<count]) == [0, 0] + Array("head-tai".utf8))
            }
        }
    }

    @Test("Platform calls behind one door: the monotonic clock and the process's CPU time move forward")
    func clocks() {
        let start = Clocks.monotonicNanoseconds()
        let cpuStart = Clocks.processCPUSeconds()
        ThisProcess.sleepBlocking(for: .milliseconds(20))
        let slept = Clocks.monotonicNanoseconds() - start
        #expect(slept >= 20_000_000 && slept < 20_000_000_000, "\(slept) ns")
        // Work only the CPU does: its time grows by at least part of the loop's wall time.
        var sum: UInt64 = 0
        let busy = Clocks.monotonicNanoseconds()
        while Clocks.monotonicNanoseconds() - busy < 50_000_000 { sum &+= Clocks.monotonicNanoseconds() }
        #expect(sum != 0 && Clocks.processCPUSeconds() - cpuStart >= 0.01)
    }

    @Test("Platform calls behind one door: the standard error stream is descriptor 2, and ThisProcess.id is getpid's")
    func processBasics() {
        #expect(FileDescriptor.standardError.rawValue == STDERR_FILENO)
        #expect(ThisProcess.id == getpid())
    }
}
