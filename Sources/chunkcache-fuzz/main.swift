import FileIO
import Foundation
import FuzzTargets

// `chunkcache-fuzz TARGET [ARGS...]`. Built by `scripts/fuzz.sh` with `-sanitize=fuzzer,address -DFUZZING`,
// it is libFuzzer's driver for TARGET (ARGS are libFuzzer's: corpus folders, `-max_total_time=`…). Built
// plainly, it replays files and folders of inputs through TARGET and reports what fails, as the tests do.

/// The target chosen on the command line, set once before any input runs.
enum Chosen {
    nonisolated(unsafe) static var target = FuzzTarget.all[0]

    /// Runs the target on one input; a broken invariant is a crash, for libFuzzer to save the input.
    static func run(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        if let problem = target.check(UnsafeRawBufferPointer(start: data, count: size)) {
            FileHandle.standardError.write(Data("chunkcache-fuzz \(target.name): \(problem)\n".utf8))
            abort()
        }
        return 0
    }
}

// The target goes to the environment too: libFuzzer's -merge, -fork and -jobs run this program again with
// its own flags only.
let arguments = CommandLine.arguments
var rest = Array(arguments.dropFirst())
if let first = rest.first, FuzzTarget.named(first) != nil {
    setenv("CHUNKCACHE_FUZZ_TARGET", first, 1)
    rest.removeFirst()
}
if let name = ProcessInfo.processInfo.environment["CHUNKCACHE_FUZZ_TARGET"], let target = FuzzTarget.named(name) {
    Chosen.target = target
} else {
    var usage = "usage: chunkcache-fuzz TARGET [libFuzzer flags] [CORPUS...]; targets:\n"
    for target in FuzzTarget.all {
        usage += "  \(target.name.padding(toLength: 18, withPad: " ", startingAt: 0)) \(target.summary)\n"
    }
    FileHandle.standardError.write(Data(usage.utf8))
    exit(rest.first == "--list" ? 0 : 64)
}

#if FUZZING
// swift-format-ignore: AlwaysUseLowerCamelCase
// libFuzzer's C entry point, named as libFuzzer names it.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

// libFuzzer sees the program name and the flags after TARGET.
var driverArguments = [arguments[0]] + rest
var cArguments: [UnsafeMutablePointer<CChar>?] = driverArguments.map { strdup($0) } + [nil]
var argc = CInt(driverArguments.count)
exit(
    cArguments.withUnsafeMutableBufferPointer { buffer in
        var argv = buffer.baseAddress!
        return LLVMFuzzerRunDriver(&argc, &argv) { data, size in Chosen.run(data, size) }
    })
#else
/// The bytes of the file at `path`; `nil` when it cannot be read (a folder inside a corpus folder, say).
func contents(of path: String) -> [UInt8]? {
    guard let file = try? FileDescriptor.open(path, O_RDONLY) else { return nil }
    return try? file.closeAfter {
        var bytes = [UInt8](repeating: 0, count: Int(try file.status().st_size))
        let count = try bytes.withUnsafeMutableBytes { try file.readAll(fromAbsoluteOffset: 0, into: $0) }
        return Array(bytes[..<count])
    }
}

var inputs: [String] = []
for path in rest {
    guard let status = try? FileSystem.status(path) else {
        FileHandle.standardError.write(Data("chunkcache-fuzz: no file or folder \(path)\n".utf8))
        exit(66)
    }
    if FileKind(mode: status.st_mode) == .directory {
        var names: [String] = []
        try? FileSystem.forEachEntry(in: path) { names.append($0.name) }
        inputs += names.sorted().map { path + "/" + $0 }
    } else {
        inputs.append(path)
    }
}
for input in inputs {
    guard let bytes = contents(of: input) else { continue }
    _ = bytes.withUnsafeBytes { Chosen.run($0.bindMemory(to: UInt8.self).baseAddress, $0.count) }
}
print("\(Chosen.target.name): \(inputs.count) inputs replayed, none failed")
#endif

/// libFuzzer's main, which the fuzzing build links, calls this one; `main` above runs first and never returns.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { Chosen.run(data, size) }
