package quorum

import (
	"context"
	"fmt"
	"log/slog"
)

// raftLogger adapts slog to raft.Logger. Raft logs every step of every
// election at Info; those go to Debug, and the Peer logs what an operator
// needs (leader changes, snapshots) itself.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) emit(level slog.Level, msg string) {
	r.l.Log(context.Background(), level, msg, "component", "raft")
}

func (r raftLogger) Debug(v ...any)              { r.emit(slog.LevelDebug, fmt.Sprint(v...)) }
func (r raftLogger) Debugf(f string, v ...any)   { r.emit(slog.LevelDebug, fmt.Sprintf(f, v...)) }
func (r raftLogger) Info(v ...any)               { r.emit(slog.LevelDebug, fmt.Sprint(v...)) }
func (r raftLogger) Infof(f string, v ...any)    { r.emit(slog.LevelDebug, fmt.Sprintf(f, v...)) }
func (r raftLogger) Warning(v ...any)            { r.emit(slog.LevelWarn, fmt.Sprint(v...)) }
func (r raftLogger) Warningf(f string, v ...any) { r.emit(slog.LevelWarn, fmt.Sprintf(f, v...)) }
func (r raftLogger) Error(v ...any)              { r.emit(slog.LevelError, fmt.Sprint(v...)) }
func (r raftLogger) Errorf(f string, v ...any)   { r.emit(slog.LevelError, fmt.Sprintf(f, v...)) }
func (r raftLogger) Fatal(v ...any)              { r.Panic(v...) }
func (r raftLogger) Fatalf(f string, v ...any)   { r.Panicf(f, v...) }
func (r raftLogger) Panic(v ...any)              { r.panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(f string, v ...any)   { r.panic(fmt.Sprintf(f, v...)) }
func (r raftLogger) panic(msg string)            { r.emit(slog.LevelError, msg); panic("raft: " + msg) }
