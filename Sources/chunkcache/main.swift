import ChunkCacheCommands
// Not for its API: in a release build on Linux this file is compiled with -static-stdlib (Package.swift), and
// importing Foundation here names the static Foundation's libraries (ICU, CoreFoundation...) for the link.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
// Answered here, on the main thread, before the command's task starts the concurrency runtime's threads.
if let reply = ChunkCacheCommand.versionReply(to: arguments) {
    print(reply)
    exit(0)
}
exit(await ChunkCacheCommand.main(arguments: arguments))
