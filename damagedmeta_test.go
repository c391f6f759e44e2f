package equeue_test

import (
	"github.com/equeue-go/equeue"
)

// damagedMeta is a store that cannot read back the metadata values
// damaged names (it returns their error, matching store.ErrDamaged, nil
// for values that read back): GetMeta and ScanMeta fail on them, and
// ScanMetaDamaged (store.DamagedMetaScanner) hands them over with no value
// and that error, as Badger does for values a machine crash lost.
type damagedMeta struct {
	equeue.Store
	damaged func(k []byte) error
}

func (s *damagedMeta) GetMeta(k []byte) ([]byte, error) {
	if err := s.damaged(k); err != nil {
		return nil, err
	}
	return s.Store.GetMeta(k)
}

func (s *damagedMeta) ScanMeta(prefix []byte, fn func(key, value []byte) error) error {
	return s.Store.ScanMeta(prefix, func(k, v []byte) error {
		if err := s.damaged(k); err != nil {
			return err
		}
		return fn(k, v)
	})
}

func (s *damagedMeta) ScanMetaDamaged(prefix []byte, fn func(key, value []byte, damaged error) error) error {
	return s.Store.ScanMeta(prefix, func(k, v []byte) error {
		if err := s.damaged(k); err != nil {
			return fn(k, nil, err)
		}
		return fn(k, v, nil)
	})
}
