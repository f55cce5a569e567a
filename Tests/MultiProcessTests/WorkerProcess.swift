import Foundation
import TestProcess

/// The CacheWorker helper as a real child process (Tests/TestProcess).
typealias WorkerProcess = ChildProcess
